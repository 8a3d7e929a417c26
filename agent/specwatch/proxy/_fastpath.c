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

static const char NEEDLE[] = "\"finish_reason\":null";

/* What kind of chunk the rewriter has: 0, anything but one whole one-line event (a line feed
 * only in the `\n\n` that ends it, no `\r`); 1, such an event whose choice has not finished
 * (a content event); 2, any other such event. */
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
        kind = memmem(s, (size_t)n, NEEDLE, sizeof(NEEDLE) - 1) != NULL ? 1 : 2;
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
