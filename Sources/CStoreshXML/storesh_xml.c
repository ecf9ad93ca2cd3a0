#include "storesh_xml.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <libxml/parser.h>

static struct {
    __typeof__(xmlCreatePushParserCtxt) *create;
    __typeof__(xmlCtxtUseOptions) *use_options;
    __typeof__(xmlParseChunk) *parse_chunk;
    __typeof__(xmlFreeParserCtxt) *free_context;
} libxml2;
static char problem[512];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
    void *library = dlopen("libxml2.so.2", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) library = dlopen("libxml2.so", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(problem, sizeof problem, "libxml2, which reads S3's answers, cannot be loaded (%s); install libxml2",
                 reason ? reason : "not found");
        return;
    }
    *(void **)&libxml2.use_options = dlsym(library, "xmlCtxtUseOptions");
    *(void **)&libxml2.parse_chunk = dlsym(library, "xmlParseChunk");
    *(void **)&libxml2.free_context = dlsym(library, "xmlFreeParserCtxt");
    void *create = dlsym(library, "xmlCreatePushParserCtxt");
    if (!libxml2.use_options || !libxml2.parse_chunk || !libxml2.free_context || !create) {
        snprintf(problem, sizeof problem, "the libxml2 that was loaded lacks its push parser");
        return;
    }
    // Last: a non-NULL `create` means every call is there.
    *(void **)&libxml2.create = create;
}

const char *storesh_xml_problem(void) { return problem[0] ? problem : "libxml2 cannot be loaded"; }

struct callbacks {
    void *context;
    storesh_xml_start_fn start;
    storesh_xml_text_fn text;
    storesh_xml_end_fn end;
};

static void on_start(void *user, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri,
                     int namespace_count, const xmlChar **namespaces, int attribute_count, int defaulted_count,
                     const xmlChar **attributes) {
    (void)uri, (void)namespace_count, (void)namespaces, (void)attribute_count, (void)defaulted_count, (void)attributes;
    const struct callbacks *callbacks = user;
    if (prefix == NULL) {
        callbacks->start(callbacks->context, (const char *)localname);
        return;
    }
    // The qualified name, as written.
    char name[512];
    snprintf(name, sizeof name, "%s:%s", (const char *)prefix, (const char *)localname);
    callbacks->start(callbacks->context, name);
}

static void on_end(void *user, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri) {
    (void)localname, (void)prefix, (void)uri;
    const struct callbacks *callbacks = user;
    callbacks->end(callbacks->context);
}

static void on_text(void *user, const xmlChar *text, int length) {
    const struct callbacks *callbacks = user;
    callbacks->text(callbacks->context, (const char *)text, length);
}

// Errors are the caller's to report (as a malformed answer), never printed by libxml2.
static void on_error(void *user, xmlErrorPtr error) { (void)user, (void)error; }

int storesh_xml_parse(const char *data, int length, void *context, storesh_xml_start_fn start,
                      storesh_xml_text_fn text, storesh_xml_end_fn end) {
    pthread_once(&load_once, load);
    if (libxml2.create == NULL) return -1;
    xmlSAXHandler handler;
    memset(&handler, 0, sizeof handler);
    handler.initialized = XML_SAX2_MAGIC;
    handler.startElementNs = on_start;
    handler.endElementNs = on_end;
    handler.characters = on_text;
    handler.cdataBlock = on_text;
    handler.serror = on_error;
    struct callbacks callbacks = {context, start, text, end};
    xmlParserCtxtPtr parser = libxml2.create(&handler, &callbacks, NULL, 0, NULL);
    if (parser == NULL) return 0;
    // Entities are not substituted from outside the document, and nothing is fetched from the network.
    libxml2.use_options(parser, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    int status = libxml2.parse_chunk(parser, data, length, 1);
    int well_formed = status == 0 && parser->wellFormed;
    libxml2.free_context(parser);
    return well_formed ? 1 : 0;
}
