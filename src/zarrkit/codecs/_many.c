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
typedef size_t (*zstd_compress_fn)(void *, void *, size_t, const void *, size_t);
typedef size_t (*zstd_bound_fn)(size_t);

/* A compressor of chunks: c-blosc with its parameters, or libzstd with a context that holds
 * them (level, checksum). */
struct encoder {
    int kind;
    blosc_compress_fn blosc;
    int clevel, shuffle;
    Py_ssize_t typesize, blocksize;
    const char *cname;
    zstd_compress_fn zstd;
    zstd_is_error_fn is_error;
    void *context; /* the calling thread's ZSTD_CCtx */
    size_t room;   /* the most a chunk can take compressed */
};

/* The encoder `kind` from its function addresses `fns` (a tuple), its context and `params`
 * ((clevel, shuffle, typesize, cname, blocksize) for blosc), for chunks of `size` bytes. */
static int encoder_from(struct encoder *e, int kind, PyObject *fns, PyObject *context,
                        PyObject *params, Py_ssize_t size)
{
    memset(e, 0, sizeof *e);
    e->kind = kind;
    Py_ssize_t need = kind == BLOSC ? 1 : kind == ZSTD ? 3 : -1;
    if (need < 0 || !PyTuple_Check(fns) || PyTuple_GET_SIZE(fns) != need || size <= 0) {
        PyErr_SetString(PyExc_ValueError, "unknown encoder kind, or wrong functions for it");
        return -1;
    }
    if (kind == BLOSC) {
        e->blosc = (blosc_compress_fn)address_of(fns, 0);
        if (!PyArg_ParseTuple(params, "iinyn", &e->clevel, &e->shuffle, &e->typesize, &e->cname,
                              &e->blocksize))
            return -1;
        /* Room for exactly what one call per chunk gives c-blosc: with more, it would keep a
         * compressed chunk larger than the chunk rather than store the chunk as is. */
        e->room = (size_t)size + BLOSC_HEADER;
    } else {
        e->zstd = (zstd_compress_fn)address_of(fns, 0);
        e->is_error = (zstd_is_error_fn)address_of(fns, 1);
        zstd_bound_fn bound = (zstd_bound_fn)address_of(fns, 2);
        e->context = PyLong_AsVoidPtr(context);
        e->room = bound && !PyErr_Occurred() ? bound((size_t)size) : 0;
    }
    if (PyErr_Occurred())
        return -1;
    if ((kind == BLOSC && !e->blosc) ||
        (kind == ZSTD && (!e->zstd || !e->is_error || !e->context || !e->room))) {
        PyErr_SetString(PyExc_ValueError, "a null function or context");
        return -1;
    }
    return 0;
}

/* One chunk of `size` bytes compressed to `out` (e->room bytes): its compressed size, or an
 * error (c-blosc's code, or -1) as a number <= 0. */
static Py_ssize_t encode_one(const struct encoder *e, const char *chunk, size_t size, char *out)
{
    if (e->kind == BLOSC)
        return e->blosc(e->clevel, e->shuffle, (size_t)e->typesize, size, chunk, out, e->room,
                        e->cname, (size_t)e->blocksize, 1);
    size_t n = e->zstd(e->context, out, e->room, chunk, size);
    return e->is_error(n) || n == 0 ? -1 : (Py_ssize_t)n;
}

/* Whether the chunk's every element has the bytes of `fill` (`itemsize` long): decided by the
 * first element for ordinary data. */
static int is_fill(const char *chunk, size_t size, const char *fill, size_t itemsize)
{
    for (size_t at = 0; at + itemsize <= size; at += itemsize)
        if (memcmp(chunk + at, fill, itemsize) != 0)
            return 0;
    return 1;
}

/* Where the chunks of a strided source lie: the first `lead` dimensions enumerate them (in C
 * order), the others are a chunk's; each chunk is copied out by blocks of `block` bytes (its
 * trailing dimensions that lie one after another in memory) unless it is all one block. */
struct layout {
    const char *buf;
    int lead, ndim;
    const Py_ssize_t *shape, *strides;
    Py_ssize_t block;
    int inner; /* the chunk dimensions left once the contiguous tail is one block */
};

static void layout_from(struct layout *l, const Py_buffer *view, int lead)
{
    l->buf = view->buf;
    l->lead = lead;
    l->ndim = view->ndim;
    l->shape = view->shape;
    l->strides = view->strides;
    l->block = view->itemsize;
    int d = view->ndim;
    while (d > lead && (view->strides[d - 1] == l->block || view->shape[d - 1] == 1)) {
        d--;
        l->block *= view->shape[d];
    }
    l->inner = d - lead;
}

/* The first byte of chunk `k`. */
static const char *chunk_start(const struct layout *l, Py_ssize_t k)
{
    const char *at = l->buf;
    for (int d = l->lead - 1; d >= 0; d--) {
        at += (k % l->shape[d]) * l->strides[d];
        k /= l->shape[d];
    }
    return at;
}

/* Chunk `k` copied into `dest` in C order, a block at a time. */
static void gather(const struct layout *l, Py_ssize_t k, char *dest)
{
    const char *base = chunk_start(l, k);
    const Py_ssize_t *shape = l->shape + l->lead, *strides = l->strides + l->lead;
    Py_ssize_t index[PyBUF_MAX_NDIM] = {0};
    for (;;) {
        const char *at = base;
        for (int d = 0; d < l->inner; d++)
            at += index[d] * strides[d];
        memcpy(dest, at, (size_t)l->block);
        dest += l->block;
        int d = l->inner - 1;
        while (d >= 0 && ++index[d] == shape[d])
            index[d--] = 0;
        if (d < 0)
            return;
    }
}

PyDoc_STRVAR(encode_many_doc,
"encode_many(kind, functions, context, params, source, lead, size, fill, dest, pos, first,\n"
"            sizes, scratch) -> (int, int, int)\n\n"
"Compress chunks of `size` bytes without the GIL, from chunk `first` on, with `kind` (0 blosc\n"
"1, 1 zstd): `functions` are addresses, (blosc_compress_ctx,) or (ZSTD_compress2,\n"
"ZSTD_isError, ZSTD_compressBound); `context` the calling thread's ZSTD_CCtx with its level\n"
"and checksum set (ignored for blosc); `params` (clevel, shuffle, typesize, cname, blocksize)\n"
"for blosc (ignored for zstd). `source` is any buffer with strides: its first `lead`\n"
"dimensions enumerate the chunks in C order, the others are a chunk's elements; a chunk whose\n"
"bytes do not lie one after another is first copied into `scratch` (a writable buffer of\n"
"`size` bytes, None when every chunk's do). Each goes to `dest` (a writable buffer) at byte\n"
"`pos` on, one after another, its compressed size put in `sizes` (a writable int64 buffer,\n"
"one per chunk); a chunk whose every element has the bytes of `fill` (None: never) is not\n"
"stored, its size -1. Stops before a chunk that might not fit in what is left of `dest` (size\n"
"+ 16 bytes for blosc, ZSTD_compressBound(size) for zstd), or at one the compressor fails:\n"
"returns (the chunk to go on from, the byte `pos` it would go to, c-blosc's error code, -1\n"
"for zstd's, or 0).");

/* Whether the arguments agree: the chunks' bytes, their count and the buffers' sizes. */
static int consistent(const Py_buffer *source, int lead, const struct layout *l, Py_ssize_t size,
                      Py_ssize_t count, const Py_buffer *fill, int have_fill, const Py_buffer *dest,
                      Py_ssize_t pos, Py_ssize_t first, const Py_buffer *sizes,
                      const Py_buffer *scratch)
{
    if (lead < 0 || lead > source->ndim)
        return 0;
    Py_ssize_t elements = 1;
    for (int d = lead; d < source->ndim; d++)
        elements *= source->shape[d];
    return size > 0 && elements * source->itemsize == size &&
           sizes->len >= count * 8 && first >= 0 && first <= count && pos >= 0 &&
           pos <= dest->len && (l->inner == 0 || (scratch->buf && scratch->len >= size)) &&
           (!have_fill || (fill->len > 0 && size % fill->len == 0));
}

static PyObject *encode_many(PyObject *self, PyObject *args)
{
    PyObject *fns, *context, *params, *source_arg, *fill_arg, *scratch_arg;
    int kind, lead;
    Py_ssize_t size, pos, first;
    Py_buffer source = {0}, dest, sizes, fill = {0}, scratch = {0};
    if (!PyArg_ParseTuple(args, "iOOOOinOw*nnw*O", &kind, &fns, &context, &params, &source_arg,
                          &lead, &size, &fill_arg, &dest, &pos, &first, &sizes, &scratch_arg))
        return NULL;
    PyObject *result = NULL;
    int have_fill = 0, have_source = 0, have_scratch = 0;
    struct encoder e;
    if (encoder_from(&e, kind, fns, context, params, size) < 0 ||
        PyObject_GetBuffer(source_arg, &source, PyBUF_STRIDED_RO) < 0)
        goto finish;
    have_source = 1;
    if (fill_arg != Py_None) {
        if (PyObject_GetBuffer(fill_arg, &fill, PyBUF_SIMPLE) < 0)
            goto finish;
        have_fill = 1;
    }
    if (scratch_arg != Py_None) {
        if (PyObject_GetBuffer(scratch_arg, &scratch, PyBUF_WRITABLE) < 0)
            goto finish;
        have_scratch = 1;
    }
    struct layout l;
    layout_from(&l, &source, lead < 0 || lead > source.ndim ? source.ndim : lead);
    Py_ssize_t count = 1;
    for (int d = 0; d < l.lead; d++)
        count *= source.shape[d];
    if (!consistent(&source, lead, &l, size, count, &fill, have_fill, &dest, pos, first, &sizes,
                    &scratch)) {
        PyErr_SetString(PyExc_ValueError, "inconsistent sizes, positions or fill value");
        goto finish;
    }
    int64_t *sized = sizes.buf;
    char *out = dest.buf;
    Py_ssize_t k = first;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; k < count; k++) {
        const char *chunk = chunk_start(&l, k);
        if (l.inner) {
            gather(&l, k, scratch.buf);
            chunk = scratch.buf;
        }
        if (have_fill && is_fill(chunk, (size_t)size, fill.buf, (size_t)fill.len)) {
            sized[k] = -1;
            continue;
        }
        if ((size_t)(dest.len - pos) < e.room)
            break;
        Py_ssize_t n = encode_one(&e, chunk, (size_t)size, out + pos);
        if (n <= 0) {
            failed = n < 0 ? (int)n : -1;
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
    if (have_scratch)
        PyBuffer_Release(&scratch);
    if (have_source)
        PyBuffer_Release(&source);
    PyBuffer_Release(&dest);
    PyBuffer_Release(&sizes);
    return result;
}

static PyMethodDef methods[] = {
    {"decode_many", decode_many, METH_VARARGS, decode_many_doc},
    {"encode_many", encode_many, METH_VARARGS, encode_many_doc},
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
