/* Many chunks of one compressor decoded into one buffer, or compressed into one, by one call
 * that does not hold the GIL.
 *
 * Why: decoding an inner chunk of a shard takes ~20-40 us of c-blosc or libzstd, and each call
 * made from Python hands the GIL over twice when another thread runs Python meanwhile (a futex
 * wake-up and a context switch each time): with two threads reading a sharded array, the hand-
 * offs cost ~15% of the CPU time of the read. One call per run of chunks hands it over once.
 *
 * The compressor's functions are those the Python side already loaded (c-blosc from numcodecs,
 * libzstd from the system), passed in by address: this module links to neither. It decodes
 * only what it can check is ordinary (the header's sizes match the buffer and the chunk, one
 * zstd frame of the declared size) and stops at the first chunk it cannot decode so: the
 * caller decodes that one itself, which names the error or handles the rare case.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { BLOSC = 0, ZSTD = 1 };
enum { BLOSC_HEADER = 16 };

typedef int (*blosc_decompress_fn)(const void *, void *, size_t, int);
typedef size_t (*zstd_decompress_fn)(void *, void *, size_t, const void *, size_t);
typedef unsigned long long (*zstd_content_size_fn)(const void *, size_t);
typedef size_t (*zstd_frame_size_fn)(const void *, size_t);
typedef unsigned (*zstd_is_error_fn)(size_t);

struct decoder {
    int kind;
    blosc_decompress_fn blosc;
    zstd_decompress_fn zstd;
    zstd_content_size_fn content_size;
    zstd_frame_size_fn frame_size;
    zstd_is_error_fn is_error;
    void *context; /* the calling thread's ZSTD_DCtx */
};

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One blosc 1 buffer decoded into `size` bytes at `dest`, when its header's sizes match the
 * buffer (c-blosc trusts them) and the chunk; 0 when it was, -1 when the caller must. */
static int blosc_one(const struct decoder *d, const unsigned char *src, size_t n, void *dest,
                     size_t size)
{
    if (n < BLOSC_HEADER || le32(src + 4) != size || le32(src + 12) != n)
        return -1;
    return d->blosc(src, dest, size, 1) == (int)size ? 0 : -1;
}

/* One zstd frame of exactly `size` declared bytes and nothing after it, decoded into `dest`. */
static int zstd_one(const struct decoder *d, const unsigned char *src, size_t n, void *dest,
                    size_t size)
{
    if (d->content_size(src, n) != (unsigned long long)size)
        return -1;
    size_t frame = d->frame_size(src, n);
    if (d->is_error(frame) || frame != n)
        return -1;
    size_t got = d->zstd(d->context, dest, size, src, n);
    return !d->is_error(got) && got == size ? 0 : -1;
}

static int decode_one(const struct decoder *d, const Py_buffer *src, char *dest, size_t size)
{
    if (d->kind == BLOSC)
        return blosc_one(d, src->buf, (size_t)src->len, dest, size);
    return zstd_one(d, src->buf, (size_t)src->len, dest, size);
}

static void *address_of(PyObject *seq, Py_ssize_t i)
{
    return PyLong_AsVoidPtr(PyTuple_GET_ITEM(seq, i));
}

/* The decoder `kind` with the function addresses `fns` (a tuple) and the zstd context. */
static int decoder_from(struct decoder *d, int kind, PyObject *fns, PyObject *context)
{
    memset(d, 0, sizeof *d);
    d->kind = kind;
    Py_ssize_t need = kind == BLOSC ? 1 : kind == ZSTD ? 4 : -1;
    if (need < 0 || !PyTuple_Check(fns) || PyTuple_GET_SIZE(fns) != need) {
        PyErr_SetString(PyExc_ValueError, "unknown decoder kind, or wrong functions for it");
        return -1;
    }
    if (kind == BLOSC) {
        d->blosc = (blosc_decompress_fn)address_of(fns, 0);
    } else {
        d->zstd = (zstd_decompress_fn)address_of(fns, 0);
        d->content_size = (zstd_content_size_fn)address_of(fns, 1);
        d->frame_size = (zstd_frame_size_fn)address_of(fns, 2);
        d->is_error = (zstd_is_error_fn)address_of(fns, 3);
        d->context = PyLong_AsVoidPtr(context);
    }
    if (PyErr_Occurred())
        return -1;
    if ((kind == BLOSC && !d->blosc) ||
        (kind == ZSTD && (!d->zstd || !d->content_size || !d->frame_size || !d->is_error ||
                          !d->context))) {
        PyErr_SetString(PyExc_ValueError, "a null function or context");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(decode_many_doc,
"decode_many(kind, functions, context, sources, dest, size, slots) -> int\n\n"
"Decode each of `sources` (bytes-like, compressed with `kind`: 0 blosc 1, 1 zstd) into\n"
"`size` bytes of `dest` (a writable buffer), source k at byte slots[k] * size, without the\n"
"GIL. `functions` are addresses: (blosc_decompress_ctx,) or (ZSTD_decompressDCtx,\n"
"ZSTD_getFrameContentSize, ZSTD_findFrameCompressedSize, ZSTD_isError); `context` the calling\n"
"thread's ZSTD_DCtx (ignored for blosc). Returns how many were decoded, in order, before the\n"
"first one this call did not decode (a header that does not match, data the library rejects):\n"
"len(sources) when all were. That one's slot may hold anything.");

static PyObject *decode_many(PyObject *self, PyObject *args)
{
    int kind;
    PyObject *fns, *context, *sources_arg, *slots_arg;
    Py_buffer dest;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "iOOOw*nO", &kind, &fns, &context, &sources_arg, &dest, &size,
                          &slots_arg))
        return NULL;
    struct decoder d;
    PyObject *sources = NULL, *slots = NULL, *result = NULL;
    Py_buffer *views = NULL;
    char **targets = NULL;
    Py_ssize_t n = 0, acquired = 0, done = 0;
    if (decoder_from(&d, kind, fns, context) < 0)
        goto finish;
    sources = PySequence_Tuple(sources_arg);
    slots = sources ? PySequence_Tuple(slots_arg) : NULL;
    if (slots == NULL)
        goto finish;
    n = PyTuple_GET_SIZE(sources);
    if (PyTuple_GET_SIZE(slots) != n || size <= 0) {
        PyErr_SetString(PyExc_ValueError, "sources and slots differ in length, or size <= 0");
        goto finish;
    }
    views = PyMem_Calloc(n ? n : 1, sizeof(Py_buffer));
    targets = PyMem_Calloc(n ? n : 1, sizeof(char *));
    if (views == NULL || targets == NULL) {
        PyErr_NoMemory();
        goto finish;
    }
    for (; acquired < n; acquired++) {
        Py_ssize_t slot = PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, acquired));
        if (slot == -1 && PyErr_Occurred())
            goto finish;
        if (slot < 0 || slot >= dest.len / size) {
            PyErr_Format(PyExc_ValueError, "slot %zd lies outside the destination", slot);
            goto finish;
        }
        targets[acquired] = (char *)dest.buf + slot * size;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(sources, acquired), &views[acquired],
                               PyBUF_SIMPLE) < 0) {
            PyErr_Clear(); /* not a contiguous buffer: the caller decodes it, and those after */
            break;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    while (done < acquired && decode_one(&d, &views[done], targets[done], (size_t)size) == 0)
        done++;
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(done);
finish:
    for (Py_ssize_t i = 0; i < acquired; i++)
        PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(targets);
    Py_XDECREF(sources);
    Py_XDECREF(slots);
    PyBuffer_Release(&dest);
    return result;
}

typedef int (*blosc_compress_fn)(int, int, size_t, size_t, const void *, void *, size_t,
                                 const char *, size_t, int);

/* Whether the chunk's every element has the bytes of `fill` (`itemsize` long): decided by the
 * first element for ordinary data. */
static int is_fill(const char *chunk, size_t size, const char *fill, size_t itemsize)
{
    for (size_t at = 0; at + itemsize <= size; at += itemsize)
        if (memcmp(chunk + at, fill, itemsize) != 0)
            return 0;
    return 1;
}

PyDoc_STRVAR(encode_blosc_many_doc,
"encode_blosc_many(compress, params, source, size, fill, dest, pos, first, sizes) -> (int, int)\n\n"
"Compress chunks of `size` bytes, one after another in `source`, with c-blosc's\n"
"blosc_compress_ctx (its address `compress`; `params` = (clevel, shuffle, typesize, cname,\n"
"blocksize)), without the GIL, from chunk `first` on: each to `dest` (a writable buffer) at\n"
"byte `pos` on, one after another, its compressed size put in `sizes` (a writable int64\n"
"buffer, one per chunk); a chunk whose every element has the bytes of `fill` (None: never)\n"
"is not stored, its size -1. Stops before a chunk that might not fit in what is left of\n"
"`dest` (size + 16 bytes), or at one c-blosc fails: returns (the chunk to go on from, the\n"
"byte `pos` it would go to, c-blosc's error code or 0).");

static PyObject *encode_blosc_many(PyObject *self, PyObject *args)
{
    PyObject *compress_arg, *fill_arg;
    int clevel, shuffle;
    Py_ssize_t typesize, blocksize, size, pos, first;
    const char *cname;
    Py_buffer source, dest, sizes;
    if (!PyArg_ParseTuple(args, "O(iinyn)y*nOw*nnw*", &compress_arg, &clevel, &shuffle,
                          &typesize, &cname, &blocksize, &source, &size, &fill_arg, &dest, &pos,
                          &first, &sizes))
        return NULL;
    PyObject *result = NULL;
    Py_buffer fill = {0};
    int have_fill = fill_arg != Py_None;
    blosc_compress_fn compress = (blosc_compress_fn)PyLong_AsVoidPtr(compress_arg);
    Py_ssize_t count = size > 0 ? source.len / size : 0;
    if (PyErr_Occurred())
        goto finish;
    if (have_fill && PyObject_GetBuffer(fill_arg, &fill, PyBUF_SIMPLE) < 0) {
        have_fill = 0;
        goto finish;
    }
    if (!compress || size <= 0 || source.len != count * size || sizes.len < count * 8 ||
        first < 0 || first > count || pos < 0 || pos > dest.len ||
        (have_fill && (fill.len <= 0 || size % fill.len != 0))) {
        PyErr_SetString(PyExc_ValueError, "inconsistent sizes, positions or fill value");
        goto finish;
    }
    int64_t *sized = sizes.buf;
    const char *src = source.buf;
    char *out = dest.buf;
    Py_ssize_t k = first;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; k < count; k++) {
        const char *chunk = src + k * size;
        if (have_fill && is_fill(chunk, (size_t)size, fill.buf, (size_t)fill.len)) {
            sized[k] = -1;
            continue;
        }
        if (dest.len - pos < size + BLOSC_HEADER)
            break;
        /* Room for exactly what one call per chunk gives c-blosc: with more, it would keep a
         * compressed chunk larger than the chunk rather than store the chunk as is. */
        int n = compress(clevel, shuffle, (size_t)typesize, (size_t)size, chunk, out + pos,
                         (size_t)(size + BLOSC_HEADER), cname, (size_t)blocksize, 1);
        if (n <= 0) {
            failed = n < 0 ? n : -1;
            break;
        }
        sized[k] = n;
        pos += n;
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(nni)", k, pos, failed);
finish:
    if (have_fill)
        PyBuffer_Release(&fill);
    PyBuffer_Release(&source);
    PyBuffer_Release(&dest);
    PyBuffer_Release(&sizes);
    return result;
}

static PyMethodDef methods[] = {
    {"decode_many", decode_many, METH_VARARGS, decode_many_doc},
    {"encode_blosc_many", encode_blosc_many, METH_VARARGS, encode_blosc_many_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_many",
    "Many chunks of one compressor decoded or encoded by one call without the GIL.", -1, methods,
};

PyMODINIT_FUNC PyInit__many(void)
{
    return PyModule_Create(&module);
}
