/* What any evaluator of a dict run must do at the least, timed by py_eval_bench.py --floor:
 * walk every entry of {query: {doc: score}}, check that the document id is a str and read its
 * UTF-8 text (an evaluator compares ids, so it reads them), and read the score. Nothing is
 * ranked, matched or scored. Built against this interpreter's headers by the script. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *walk(PyObject *self, PyObject *run) {
    Py_ssize_t i = 0, bad = 0, bytes = 0;
    PyObject *q, *docs;
    double acc = 0;
    if (!PyDict_Check(run)) {
        PyErr_SetString(PyExc_TypeError, "walk: a dict of dicts");
        return NULL;
    }
    while (PyDict_Next(run, &i, &q, &docs)) {
        Py_ssize_t j = 0;
        PyObject *d, *v;
        if (!PyDict_Check(docs)) {
            PyErr_SetString(PyExc_TypeError, "walk: a dict of dicts");
            return NULL;
        }
        while (PyDict_Next(docs, &j, &d, &v)) {
            Py_ssize_t n;
            const char *s;
            if (!PyUnicode_Check(d) || !PyFloat_Check(v)) {
                bad++;
                continue;
            }
            s = PyUnicode_AsUTF8AndSize(d, &n);
            if (s == NULL)
                return NULL;
            bytes += n + (n > 0 ? s[0] : 0);
            acc += PyFloat_AS_DOUBLE(v);
        }
    }
    /* the sums are returned so that no read can be left out */
    return Py_BuildValue("(dnn)", acc, bytes, bad);
}

static PyMethodDef methods[] = {{"walk", walk, METH_O, "walk a dict run"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "py_eval_floor", NULL, -1, methods};
PyMODINIT_FUNC PyInit_py_eval_floor(void) { return PyModule_Create(&module); }
