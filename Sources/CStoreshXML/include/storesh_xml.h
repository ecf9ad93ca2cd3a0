#ifndef STORESH_XML_H
#define STORESH_XML_H

// S3's answers are XML, read with libxml2's streaming (SAX) parser. libxml2 is loaded on the first answer, not when
// the process starts: loading it (and the ICU libraries it needs) cost every cold `storesh -c` about a millisecond,
// though only s3:// buckets need it (issue 23).

// An element starts (`name` is its qualified name), text arrives (not NUL-terminated; entities and character
// references already replaced), an element ends.
typedef void (*storesh_xml_start_fn)(void *context, const char *name);
typedef void (*storesh_xml_text_fn)(void *context, const char *text, int length);
typedef void (*storesh_xml_end_fn)(void *context);

// Parses `length` bytes of `data`, calling back in document order. Returns 1 for a well-formed document, 0 for one
// that is not (callbacks may have run for its beginning), -1 when libxml2 cannot be loaded (storesh_xml_problem()
// says why). No external entity or DTD is ever fetched.
int storesh_xml_parse(const char *data, int length, void *context, storesh_xml_start_fn start,
                      storesh_xml_text_fn text, storesh_xml_end_fn end);
const char *storesh_xml_problem(void);

#endif
