#ifndef STORESH_TERMINAL_H
#define STORESH_TERMINAL_H

// A small C layer over libedit for storesh's shell: Swift cannot call libedit's variadic el_set/el_get and
// history(), and the shell needs a character reader and a SIGINT handler that C expresses directly.

#include <stddef.h>

typedef struct storesh_editor storesh_editor;

// libedit's answers from a key function (CC_REFRESH, CC_REDISPLAY, CC_ERROR), for Swift.
extern const unsigned char storesh_cc_refresh;
extern const unsigned char storesh_cc_redisplay;
extern const unsigned char storesh_cc_error;

// Called on Tab with the line up to the cursor. It may call storesh_editor_insert and print candidates;
// it returns one of libedit's CC_* codes (CC_REFRESH, CC_REDISPLAY, CC_ERROR).
typedef unsigned char (*storesh_complete_fn)(void *context, storesh_editor *editor, const char *line_before_cursor);

// Opens an editor on the terminal (standard input and output) with emacs bindings, reverse history search
// on Ctrl-R, and Tab bound to `complete`. Returns NULL if libedit cannot be loaded or cannot start; then
// storesh_editor_problem() says why.
storesh_editor *storesh_editor_open(const char *program, void *context, storesh_complete_fn complete);
const char *storesh_editor_problem(void);
void storesh_editor_close(storesh_editor *editor);

// The prompt. Bytes between two '\1' are non-printing (colour escapes), so line editing keeps its columns.
void storesh_editor_set_prompt(storesh_editor *editor, const char *prompt);

// Reads one line (without its newline). Returns NULL at end of input (Ctrl-D on an empty line) or when
// interrupted; then *interrupted tells which. The string stays valid until the next call.
const char *storesh_editor_read_line(storesh_editor *editor, int *interrupted);

// Inserts text at the cursor (from the completion callback).
int storesh_editor_insert(storesh_editor *editor, const char *text);

// The in-memory history that Ctrl-R and the arrow keys walk.
void storesh_editor_history_clear(storesh_editor *editor);
void storesh_editor_history_add(storesh_editor *editor, const char *line);

// SIGINT (Ctrl-C): sets a flag instead of ending the process; reads in progress return EINTR.
void storesh_install_interrupt_handler(void);
int storesh_interrupt_pending(void);
void storesh_interrupt_clear(void);
// Waits until `fd` can be read (or is at its end): 1; or until Ctrl-C: 0; -1 on an error. Reads from a pipe or a
// device (a put from /dev/stdin, a FIFO) wait here, so that Ctrl-C ends them.
int storesh_wait_readable(int fd);

// Makes the C library decode multi-byte input: the user's locale, or C.UTF-8 when that is not UTF-8.
void storesh_use_utf8_locale(void);

// The terminal's size in rows and columns; 0 when standard output is not a terminal.
/// The width in columns of the terminal `descriptor` is, or 0 when it is none (ioctl is variadic: Swift cannot call it).
int storesh_terminal_columns(int descriptor);
void storesh_terminal_size(int *rows, int *columns);

// Large transient buffers are mapped and given back to the system when freed (streamed uploads and downloads).
void storesh_map_large_buffers(void);

#endif
