#include "storesh_terminal.h"

#include <dlfcn.h>
#include <errno.h>
#include <histedit.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include <wchar.h>

// libedit is loaded when the prompt opens, not when the process starts: a script or `storesh -c` never edits a
// line, and the dynamic loader's work for libedit and the libraries it needs (libtinfo, libbsd, libmd) was a
// measurable part of their cold start (issue 23). The header's declarations give the calls their types.
static struct {
    __typeof__(el_init) *el_init;
    __typeof__(el_end) *el_end;
    __typeof__(el_get) *el_get;
    __typeof__(el_set) *el_set;
    __typeof__(el_gets) *el_gets;
    __typeof__(el_line) *el_line;
    __typeof__(el_reset) *el_reset;
    __typeof__(el_resize) *el_resize;
    __typeof__(el_insertstr) *el_insertstr;
    __typeof__(history_init) *history_init;
    __typeof__(history_end) *history_end;
    __typeof__(history) *history;
} libedit;
static char libedit_problem[512];

static int load_libedit(void) {
    if (libedit.el_init != NULL) return 1;
    void *library = dlopen("libedit.so.2", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) library = dlopen("libedit.so", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(libedit_problem, sizeof libedit_problem, "libedit cannot be loaded (%s); install libedit2",
                 reason ? reason : "not found");
        return 0;
    }
#define STORESH_LOAD(name)                                                                                     \
    if ((*(void **)&libedit.name = dlsym(library, #name)) == NULL) {                                           \
        snprintf(libedit_problem, sizeof libedit_problem, "libedit has no %s: it is not the expected library", \
                 #name);                                                                                       \
        return 0;                                                                                              \
    }
    STORESH_LOAD(el_end) STORESH_LOAD(el_get) STORESH_LOAD(el_set) STORESH_LOAD(el_gets) STORESH_LOAD(el_line)
    STORESH_LOAD(el_reset) STORESH_LOAD(el_resize) STORESH_LOAD(el_insertstr) STORESH_LOAD(history_init)
    STORESH_LOAD(history_end) STORESH_LOAD(history)
    // Last: a non-NULL el_init means every call is there.
    STORESH_LOAD(el_init)
#undef STORESH_LOAD
    return 1;
}

const char *storesh_editor_problem(void) {
    return libedit_problem[0] ? libedit_problem : "libedit cannot start on this terminal";
}

struct storesh_editor {
    EditLine *el;
    History *history;
    HistEvent event;
    void *context;
    storesh_complete_fn complete;
    char *prompt;
    int interrupted;
    // Bytes read but not yet decoded: what followed a broken UTF-8 sequence is read again, not lost.
    char pending[8];
    size_t pending_count;
};

const unsigned char storesh_cc_refresh = CC_REFRESH;
const unsigned char storesh_cc_redisplay = CC_REDISPLAY;
const unsigned char storesh_cc_error = CC_ERROR;

static volatile sig_atomic_t interrupt_pending = 0;
static volatile sig_atomic_t resize_pending = 0;

// The terminal's mode before editing, restored if a fatal signal ends the process mid-line.
static struct termios saved_terminal;
static volatile sig_atomic_t have_saved_terminal = 0;

// The self-pipe: a signal may reach any thread, not the one blocked reading the terminal, so the handler
// also writes a byte here, and the reader waits on the terminal and this pipe together.
static int wake_pipe[2] = {-1, -1};

static void wake_reader(void) {
    if (wake_pipe[1] >= 0) {
        int saved = errno;
        (void)!write(wake_pipe[1], "!", 1);
        errno = saved;
    }
}

static void drain_wake_pipe(void) {
    char bytes[64];
    if (wake_pipe[0] >= 0) while (read(wake_pipe[0], bytes, sizeof bytes) > 0) {}
}

static void on_interrupt(int signal_number) {
    (void)signal_number;
    interrupt_pending = 1;
    wake_reader();
}

static void on_resize(int signal_number) {
    (void)signal_number;
    resize_pending = 1;
    wake_reader();
}

static void on_fatal(int signal_number) {
    if (have_saved_terminal) tcsetattr(STDIN_FILENO, TCSANOW, &saved_terminal);  // async-signal-safe
    signal(signal_number, SIG_DFL);
    raise(signal_number);
}

static void install(int signal_number, void (*handler)(int)) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: a blocked read returns EINTR, so the signal is seen at once
    sigaction(signal_number, &action, NULL);
}

void storesh_install_interrupt_handler(void) {
    if (wake_pipe[0] < 0 && pipe(wake_pipe) == 0) {
        for (int end = 0; end < 2; end++) {
            fcntl(wake_pipe[end], F_SETFL, fcntl(wake_pipe[end], F_GETFL) | O_NONBLOCK);
            fcntl(wake_pipe[end], F_SETFD, FD_CLOEXEC);
        }
    }
    install(SIGINT, on_interrupt);
}

int storesh_interrupt_pending(void) { return interrupt_pending; }

int storesh_wait_readable(int fd) {
    for (;;) {
        if (interrupt_pending) return 0;
        struct pollfd watched[2] = {{.fd = fd, .events = POLLIN}, {.fd = wake_pipe[0], .events = POLLIN}};
        int ready = poll(watched, wake_pipe[0] >= 0 ? 2 : 1, -1);
        if (ready < 0 && errno != EINTR) return -1;
        if (interrupt_pending) return 0;
        if (ready > 0 && watched[0].revents != 0) return 1;
    }
}

void storesh_interrupt_clear(void) {
    interrupt_pending = 0;
    drain_wake_pipe();
}

void storesh_use_utf8_locale(void) {
    setlocale(LC_CTYPE, "");
    const char *codeset = nl_langinfo(CODESET);
    if (codeset == NULL || strcmp(codeset, "UTF-8") != 0) setlocale(LC_CTYPE, "C.UTF-8");
}

static storesh_editor *editor_of(EditLine *el) {
    storesh_editor *editor = NULL;
    libedit.el_get(el, EL_CLIENTDATA, &editor);
    return editor;
}

static char *prompt_of(EditLine *el) {
    storesh_editor *editor = editor_of(el);
    return editor && editor->prompt ? editor->prompt : "> ";
}

// Reads one character, decoding UTF-8. Bytes that are not UTF-8 (pasted binary) become U+FFFD rather than
// confusing the editor; an interrupt ends the read so that Ctrl-C is handled at once.
static int read_character(EditLine *el, wchar_t *character) {
    storesh_editor *editor = editor_of(el);
    char bytes[8];
    size_t count = 0;
    mbstate_t state;
    memset(&state, 0, sizeof state);
    for (;;) {
        if (interrupt_pending) {
            editor->interrupted = 1;
            return -1;
        }
        if (resize_pending) {
            resize_pending = 0;
            libedit.el_resize(el);  // as libedit itself does: the next key redraws at the new width
        }
        unsigned char byte;
        if (editor->pending_count > 0) {
            byte = (unsigned char)editor->pending[0];
            memmove(editor->pending, editor->pending + 1, --editor->pending_count);
            goto decode;
        }
        struct pollfd waits[2] = {{STDIN_FILENO, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}};
        if (poll(waits, wake_pipe[0] >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (waits[1].revents & POLLIN) {
            drain_wake_pipe();
            continue;  // the flags above say why
        }
        ssize_t got = read(STDIN_FILENO, &byte, 1);
        if (got == 0) return 0;
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return -1;
        }
    decode:
        bytes[count++] = (char)byte;
        // Decode all bytes so far from a fresh state: after "incomplete", mbrtowc has consumed them into its
        // state, and feeding them again to that state would fail.
        memset(&state, 0, sizeof state);
        size_t result = mbrtowc(character, bytes, count, &state);
        if (result == (size_t)-2 && count < 4) continue;  // an incomplete sequence: read on
        if (result == (size_t)-1 || result == (size_t)-2) {
            // A broken sequence: its first byte becomes U+FFFD, and the bytes after it are read again (a
            // following '(' or Enter must not be swallowed).
            *character = 0xFFFD;
            if (count > 1) {
                memmove(editor->pending + count - 1, editor->pending, editor->pending_count);
                memcpy(editor->pending, bytes + 1, count - 1);
                editor->pending_count += count - 1;
            }
            return 1;
        }
        if (*character == 0) *character = 0xFFFD;  // a NUL would end the line early
        return 1;
    }
}

static unsigned char complete_command(EditLine *el, int character) {
    (void)character;
    storesh_editor *editor = editor_of(el);
    if (editor == NULL || editor->complete == NULL) return CC_ERROR;
    const LineInfo *line = libedit.el_line(el);
    size_t length = (size_t)(line->cursor - line->buffer);
    char *before = malloc(length + 1);
    if (before == NULL) return CC_ERROR;
    memcpy(before, line->buffer, length);
    before[length] = '\0';
    unsigned char result = editor->complete(editor->context, editor, before);
    free(before);
    return result;
}

// Ctrl-C while editing: libedit's edit mode delivers it as a key rather than SIGINT, so this key function
// drops the line and ends the read, marked as interrupted rather than as end of input.
static unsigned char interrupt_command(EditLine *el, int character) {
    (void)character;
    storesh_editor *editor = editor_of(el);
    if (editor) editor->interrupted = 1;
    interrupt_pending = 0;
    return CC_EOF;
}

storesh_editor *storesh_editor_open(const char *program, void *context, storesh_complete_fn complete) {
    if (!load_libedit()) return NULL;
    storesh_editor *editor = calloc(1, sizeof *editor);
    if (editor == NULL) return NULL;
    editor->context = context;
    editor->complete = complete;
    editor->el = libedit.el_init(program, stdin, stdout, stderr);
    editor->history = libedit.history_init();
    if (editor->el == NULL || editor->history == NULL) {
        storesh_editor_close(editor);
        return NULL;
    }
    libedit.history(editor->history, &editor->event, H_SETSIZE, 1000);
    libedit.history(editor->history, &editor->event, H_SETUNIQUE, 1);
    libedit.el_set(editor->el, EL_CLIENTDATA, editor);
    libedit.el_set(editor->el, EL_EDITOR, "emacs");
    // storesh handles the signals itself (libedit's own handling restarts reads, hiding Ctrl-C).
    libedit.el_set(editor->el, EL_SIGNAL, 0);
    if (tcgetattr(STDIN_FILENO, &saved_terminal) == 0) have_saved_terminal = 1;
    install(SIGWINCH, on_resize);
    install(SIGTERM, on_fatal);
    install(SIGHUP, on_fatal);
    signal(SIGQUIT, SIG_IGN);  // as interactive shells do: a pasted Ctrl-\ must not end the session
    libedit.el_set(editor->el, EL_HIST, libedit.history, editor->history);
    libedit.el_set(editor->el, EL_PROMPT_ESC, prompt_of, '\1');
    libedit.el_set(editor->el, EL_GETCFN, read_character);
    libedit.el_set(editor->el, EL_ADDFN, "storesh-complete", "Complete commands, keys and paths", complete_command);
    libedit.el_set(editor->el, EL_BIND, "^I", "storesh-complete", NULL);
    // Ctrl-R: the last command that starts with what is typed (libedit's incremental search mode garbles
    // arrow keys pressed inside it).
    libedit.el_set(editor->el, EL_BIND, "^R", "ed-search-prev-history", NULL);
    // The keys terminals send for Ctrl/Alt-arrows, Home, End, Delete, Insert and Page Up/Down, so that none of
    // them types its escape sequence into the line.
    static const char *const bindings[][2] = {
        {"\033[1;5D", "ed-prev-word"}, {"\033[1;5C", "em-next-word"}, {"\033[1;3D", "ed-prev-word"},
        {"\033[1;3C", "em-next-word"}, {"\033[5D", "ed-prev-word"}, {"\033[5C", "em-next-word"},
        {"\033[1~", "ed-move-to-beg"}, {"\033[7~", "ed-move-to-beg"}, {"\033[H", "ed-move-to-beg"},
        {"\033OH", "ed-move-to-beg"}, {"\033[4~", "ed-move-to-end"}, {"\033[8~", "ed-move-to-end"},
        {"\033[F", "ed-move-to-end"}, {"\033OF", "ed-move-to-end"}, {"\033[3~", "ed-delete-next-char"},
        {"\033[2~", "ed-unassigned"}, {"\033[5~", "ed-unassigned"}, {"\033[6~", "ed-unassigned"},
    };
    for (size_t index = 0; index < sizeof bindings / sizeof bindings[0]; index++) {
        libedit.el_set(editor->el, EL_BIND, bindings[index][0], bindings[index][1], NULL);
    }
    libedit.el_set(editor->el, EL_ADDFN, "storesh-interrupt", "Drop the line", interrupt_command);
    libedit.el_set(editor->el, EL_BIND, "^C", "storesh-interrupt", NULL);
    return editor;
}

void storesh_editor_close(storesh_editor *editor) {
    if (editor == NULL) return;
    if (editor->el) libedit.el_end(editor->el);
    if (editor->history) libedit.history_end(editor->history);
    free(editor->prompt);
    free(editor);
}

void storesh_editor_set_prompt(storesh_editor *editor, const char *prompt) {
    free(editor->prompt);
    editor->prompt = strdup(prompt);
}

const char *storesh_editor_read_line(storesh_editor *editor, int *interrupted) {
    int count = 0;
    editor->interrupted = 0;
    const char *line = libedit.el_gets(editor->el, &count);
    *interrupted = editor->interrupted;
    if (editor->interrupted) {
        interrupt_pending = 0;
        libedit.el_reset(editor->el);
        return NULL;
    }
    if (line == NULL || count <= 0) return NULL;
    return line;
}

int storesh_editor_insert(storesh_editor *editor, const char *text) {
    return libedit.el_insertstr(editor->el, text);
}

void storesh_editor_history_clear(storesh_editor *editor) {
    libedit.history(editor->history, &editor->event, H_CLEAR);
}

void storesh_editor_history_add(storesh_editor *editor, const char *line) {
    libedit.history(editor->history, &editor->event, H_ENTER, line);
}

int storesh_terminal_columns(int descriptor) {
    struct winsize size;
    if (!isatty(descriptor) || ioctl(descriptor, TIOCGWINSZ, &size) != 0) return 0;
    return size.ws_col;
}

void storesh_terminal_size(int *rows, int *columns) {
    struct winsize size;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0) {
        *rows = size.ws_row;
        *columns = size.ws_col;
    } else {
        *rows = 0;
        *columns = 0;
    }
}

#include <malloc.h>

void storesh_map_large_buffers(void) {
    // glibc raises its mmap threshold as mapped blocks are freed, after which 8 MiB chunks come from the heap and
    // are never given back; a fixed threshold keeps a streamed transfer's memory near one chunk.
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
}
