/* The libFuzzer side of the differential targets of tests/fuzz/targets.py, shared by
 * drift_kernels.c, metrics_ragged.c and trec_reader.c (built by scripts/fuzz.sh with
 * AddressSanitizer and UBSan, linked with the extensions' own sources).
 *
 * Before the interpreter starts, the sanitized extensions are registered as built-in
 * modules under their package names, so that `import ragstream.drift._kernels` (and every
 * caller of it in the package) gets the instrumented code. Each input is handed to
 * `tests.fuzz.targets.one_input(TARGET, data)`, which runs the compiled code and its Python
 * twin and raises AssertionError when they differ: any exception aborts, and libFuzzer
 * saves the input.
 */
#ifndef RAGSTREAM_FUZZ_HARNESS_H
#define RAGSTREAM_FUZZ_HARNESS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    const char *name;          /* the module's import name */
    PyObject *(*init)(void);   /* its PyInit function, from the extension's source */
} Builtin;

static PyObject *one_input, *target_name;

/* Registers the modules, starts the interpreter and finds the target's check. */
static int harness_init(const char *target, const Builtin *modules, int n) {
    for (int i = 0; i < n; i++)
        if (PyImport_AppendInittab(modules[i].name, modules[i].init) < 0) abort();
    Py_InitializeEx(0);
    for (int i = 0; i < n; i++) { /* the sanitized build, not an installed .so */
        PyObject *m = PyImport_ImportModule(modules[i].name);
        PyObject *spec = m ? PyObject_GetAttrString(m, "__spec__") : NULL;
        PyObject *origin = spec ? PyObject_GetAttrString(spec, "origin") : NULL;
        if (!origin || !PyUnicode_Check(origin) ||
            PyUnicode_CompareWithASCIIString(origin, "built-in") != 0) {
            PyErr_Print();
            fprintf(stderr, "fuzz: %s is not the built-in (sanitized) module\n", modules[i].name);
            abort();
        }
        Py_DECREF(origin);
        Py_DECREF(spec);
        Py_DECREF(m);
    }
    PyObject *targets = PyImport_ImportModule("tests.fuzz.targets");
    one_input = targets ? PyObject_GetAttrString(targets, "one_input") : NULL;
    target_name = PyUnicode_FromString(target);
    if (!one_input || !target_name) {
        PyErr_Print();
        abort();
    }
    return 0;
}

static int harness_one(const uint8_t *data, size_t size) {
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
    PyObject *out = bytes ? PyObject_CallFunctionObjArgs(one_input, target_name, bytes, NULL) : NULL;
    if (!out) {
        PyErr_Print();
        fprintf(stderr, "fuzz: the check failed on %zu bytes\n", size);
        abort();
    }
    Py_DECREF(out);
    Py_DECREF(bytes);
    return 0;
}

#define FUZZ_TARGET(TARGET, ...)                                                            \
    int LLVMFuzzerInitialize(int *argc, char ***argv) {                                     \
        (void)argc, (void)argv;                                                             \
        static const Builtin modules[] = {__VA_ARGS__};                                     \
        return harness_init(TARGET, modules, (int)(sizeof modules / sizeof *modules));      \
    }                                                                                       \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {                          \
        return harness_one(data, size);                                                     \
    }

#endif
