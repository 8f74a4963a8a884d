/*
 * tbnative: the C extension of tests/integration/test_native.py, built by
 * the test with frame pointers against the stable ABI of 3.8 (one .abi3.so
 * for every interpreter we profile): a CPU-bound C function, one that calls
 * a Python callable back, one that calls into libz.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <zlib.h>

static volatile double sink;

/* The loop is in the function itself: a leaf function of its own would
 * have no frame (GCC omits leaf frames) and hide spin from the unwinder. */
static PyObject *spin(PyObject *self, PyObject *arg)
{
	long n = PyLong_AsLong(arg);
	double x = 0;

	for (long i = 0; i < n; i++)
		x += (double)i * 1.0000001;
	sink = x;
	Py_RETURN_NONE;
}

static PyObject *call_back(PyObject *self, PyObject *args)
{
	PyObject *fn, *r;
	long n;

	if (!PyArg_ParseTuple(args, "Ol", &fn, &n))
		return NULL;
	for (long i = 0; i < n; i++) {
		r = PyObject_CallObject(fn, NULL);
		if (!r)
			return NULL;
		Py_DECREF(r);
	}
	Py_RETURN_NONE;
}

static PyObject *zlib_compress(PyObject *self, PyObject *args)
{
	const char *buf;	/* "y#": Py_buffer is in the stable ABI from 3.11 only */
	Py_ssize_t len;
	uLongf cap, n;
	Bytef *out;
	int rounds;

	if (!PyArg_ParseTuple(args, "y#i", &buf, &len, &rounds))
		return NULL;
	cap = compressBound(len);
	out = malloc(cap);
	for (int i = 0; out && i < rounds; i++) {
		n = cap;
		compress2(out, &n, (const Bytef *)buf, len, 9);
	}
	free(out);
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
	{ "spin", spin, METH_O, NULL },
	{ "call_back", call_back, METH_VARARGS, NULL },
	{ "zlib_compress", zlib_compress, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef mod = { PyModuleDef_HEAD_INIT, "tbnative", NULL, -1, methods };

PyMODINIT_FUNC PyInit_tbnative(void)
{
	return PyModule_Create(&mod);
}
