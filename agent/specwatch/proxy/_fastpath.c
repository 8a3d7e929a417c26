/* The stream rewriter's per-event test in one C call (proxy/stream.py, `event_kind`).
 *
 * Compiled Python pays ~1k instructions a `bytes.find` (a method call whose arguments are
 * parsed from a tuple), three of them for every streamed event; this is the same test, built
 * with the compiled analysis (setup.py). The Python function stays the reference: a property
 * test holds the two together (tests/unit/proxy/test_fastpath.py, run on the compiled build).
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static int has(const char *s, Py_ssize_t n, const char *needle) {
    return memmem(s, (size_t)n, needle, strlen(needle)) != NULL;
}

static const char ERROR_PREFIX[] = "data: {\"error\"";

/* What kind of chunk the rewriter has, as stream.one_event_kind says (the reference):
 * 0, anything but one whole one-line event (a line feed only in the `\n\n` that ends it, no
 * `\r`); 1, a content event (its choice not finished); 4, vLLM's usage event (usage, no
 * choices; SGLang's `"usage":null` is no usage); 3, a finishing chunk that carries nothing
 * the rewriter keeps (no usage, no per-request data of any engine, not an error); 2, any other
 * one-line event. */
static PyObject *event_kind(PyObject *self, PyObject *chunk) {
    if (!PyBytes_Check(chunk)) {
        PyErr_SetString(PyExc_TypeError, "event_kind() takes bytes");
        return NULL;
    }
    const char *s = PyBytes_AS_STRING(chunk);
    Py_ssize_t n = PyBytes_GET_SIZE(chunk);
    long kind = 0;
    if (n >= 2 && s[n - 1] == '\n' && s[n - 2] == '\n'
        && memchr(s, '\n', (size_t)(n - 2)) == NULL && memchr(s, '\r', (size_t)n) == NULL) {
        if (has(s, n, "\"finish_reason\":null")) {
            kind = 1;
        } else if (has(s, n, "\"usage\"") && !has(s, n, "\"usage\":null")) {
            kind = has(s, n, "\"choices\":[]") ? 4 : 2;
        } else if (has(s, n, "\"finish_reason\":")
                   && !(n >= (Py_ssize_t)strlen(ERROR_PREFIX)
                        && memcmp(s, ERROR_PREFIX, strlen(ERROR_PREFIX)) == 0)
                   && !has(s, n, "\"speculative_decoding") && !has(s, n, "\"timings\"")
                   && !has(s, n, "\"meta_info\"") && !has(s, n, "\"sglext\"")) {
            kind = 3;
        } else {
            kind = 2;
        }
    }
    return PyLong_FromLong(kind);
}

static PyMethodDef methods[] = {
    {"event_kind", event_kind, METH_O, "The rewriter's one-event test (stream.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastpath", "The stream rewriter's per-event test in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__fastpath(void) { return PyModule_Create(&module); }
