/* Batches of the file store's small-value reads and atomic writes, each batch in one call that
 * does not hold the GIL; and a whole value's replacement under its lock, in one such call.
 *
 * Why: a small chunk costs a few short system calls (open, fstat, pread, close; or create,
 * write, close, rename; and a lock and unlock around a replacement). Made from Python, each one
 * hands the GIL over, and with two threads every hand-off wakes the other thread (on the 2-core
 * VM, a sleeping vCPU): two threads read 4096 files of 16 KiB slower than one. Here a whole
 * batch runs without the GIL, so threads overlap their kernel work, and Python's work is one
 * call per batch.
 *
 * Only the fast, common path is done here. Every failure is reported per value (a negative
 * errno) and the caller redoes that value with its own code, which has the full handling:
 * escape checks through symbolic links, missing directories, messages naming the key.
 *
 * Linux only (openat2 with RESOLVE_NO_SYMLINKS: a path through no symbolic link, under the
 * store's resolved root, is inside the root; keys cannot hold "..").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* struct open_how and its flags (linux/openat2.h), spelled out for older headers. */
struct zk_open_how {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};
#define ZK_RESOLVE_NO_MAGICLINKS 0x02
#define ZK_RESOLVE_NO_SYMLINKS 0x04

static int open_no_symlinks(const char *path, int flags)
{
    struct zk_open_how how = {(uint64_t)flags, 0,
                              ZK_RESOLVE_NO_SYMLINKS | ZK_RESOLVE_NO_MAGICLINKS};
    long fd;
    do {
        fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
    } while (fd < 0 && errno == EINTR);
    return (int)fd;
}

/* Read the whole file `fd` of `size` bytes into dest; the bytes read, or -errno. */
static int64_t read_whole(int fd, char *dest, int64_t size)
{
    int64_t got = 0;
    while (got < size) {
        ssize_t n = pread(fd, dest + got, (size_t)(size - got), got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            break; /* shorter than fstat said: what is there */
        got += n;
    }
    return got;
}

/* The directory of consecutive values, opened once for all of them: a value is opened by its
 * name in it (a single lookup) instead of by its whole path. */
struct dir_cache {
    char path[4096]; /* the directory's absolute path, "" when none is open */
    size_t len;
    int fd;          /* or -errno of its failed open */
};

/* A descriptor of the directory of `path` (the part before its last "/", given as `len` bytes),
 * or -errno; the open one when it is the same directory. */
static int dir_of(struct dir_cache *cache, const char *path, size_t len)
{
    if (cache->len == len && len && memcmp(cache->path, path, len) == 0)
        return cache->fd;
    if (cache->fd >= 0)
        close(cache->fd);
    cache->len = 0;
    if (len == 0 || len >= sizeof cache->path) {
        cache->fd = -ENAMETOOLONG; /* the caller opens the whole path instead */
        return cache->fd;
    }
    memcpy(cache->path, path, len);
    cache->path[len] = 0;
    cache->len = len;
    int fd = open_no_symlinks(cache->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    cache->fd = fd < 0 ? -errno : fd;
    return cache->fd;
}

/* Open the value at `path`: by name in its directory, neither of them through a link. */
static int open_value(struct dir_cache *cache, const char *path, int flags)
{
    const char *slash = strrchr(path, '/');
    int dir_fd = dir_of(cache, path, slash ? (size_t)(slash - path) : 0);
    int fd;
    if (dir_fd == -ENAMETOOLONG)
        return open_no_symlinks(path, flags);
    if (dir_fd < 0) {
        errno = -dir_fd;
        return -1;
    }
    do {
        fd = openat(dir_fd, slash + 1, flags | O_NOFOLLOW);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

/* One value: its size (>= 0) once read into dest, -errno, or, when it is larger than `room`,
 * its size with *fits = 0 (nothing read). A file that is not regular is no value: -ENOENT. */
static int64_t read_one(struct dir_cache *cache, const char *path, int flags, char *dest,
                        int64_t room, int *fits)
{
    struct stat st;
    int64_t result;
    int fd = open_value(cache, path, flags);
    *fits = 1;
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0)
        result = -errno;
    else if (!S_ISREG(st.st_mode))
        result = -ENOENT;
    else if (st.st_size > room) {
        *fits = 0;
        result = st.st_size;
    } else
        result = read_whole(fd, dest, st.st_size);
    close(fd);
    return result;
}

/* Get the bytes of each item of a tuple of bytes objects (borrowed; the tuple keeps them). */
static const char **bytes_pointers(PyObject *tuple, Py_ssize_t n)
{
    const char **ptrs = PyMem_Malloc(sizeof(char *) * (n ? n : 1));
    if (ptrs == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, i);
        if (!PyBytes_Check(item)) {
            PyMem_Free(ptrs);
            PyErr_SetString(PyExc_TypeError, "paths and names must be bytes");
            return NULL;
        }
        ptrs[i] = PyBytes_AS_STRING(item);
    }
    return ptrs;
}

PyDoc_STRVAR(read_files_doc,
"read_files(paths, flags, out, sizes) -> int\n\n"
"Read the files at `paths` (a tuple of absolute paths as bytes, opened with `flags` through no\n"
"symbolic link: each directory once, by openat2, then its files by name) one after another\n"
"into the writable buffer `out`, packed. For each one handled, `sizes` (a writable buffer of\n"
"int64) gets its byte count, or -errno if it could not be read (-ENOENT also for what is not\n"
"a regular file; -ELOOP for a path through a link). Returns how many were handled: fewer than\n"
"all when the next one does not fit in what is left of `out`; its size is then in `sizes` at\n"
"that place.");

static PyObject *read_files(PyObject *self, PyObject *args)
{
    PyObject *paths_arg, *tuple;
    int flags;
    Py_buffer out, sizes;
    if (!PyArg_ParseTuple(args, "Oiw*w*", &paths_arg, &flags, &out, &sizes))
        return NULL;
    tuple = PySequence_Tuple(paths_arg);
    Py_ssize_t n = tuple ? PyTuple_GET_SIZE(tuple) : 0;
    const char **paths = tuple ? bytes_pointers(tuple, n) : NULL;
    if (paths != NULL && sizes.len < n * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "sizes holds fewer int64 than there are paths");
        PyMem_Free(paths);
        paths = NULL;
    }
    if (paths == NULL) {
        Py_XDECREF(tuple);
        PyBuffer_Release(&out);
        PyBuffer_Release(&sizes);
        return NULL;
    }
    int64_t *size_of = sizes.buf;
    char *dest = out.buf;
    int64_t room = out.len;
    Py_ssize_t done = 0;
    Py_BEGIN_ALLOW_THREADS
    struct dir_cache cache = {.len = 0, .fd = -1};
    for (; done < n; done++) {
        int fits;
        int64_t got = read_one(&cache, paths[done], flags, dest, room, &fits);
        size_of[done] = got;
        if (!fits)
            break;
        if (got > 0) {
            dest += got;
            room -= got;
        }
    }
    if (cache.fd >= 0)
        close(cache.fd);
    Py_END_ALLOW_THREADS
    PyMem_Free(paths);
    Py_DECREF(tuple);
    PyBuffer_Release(&out);
    PyBuffer_Release(&sizes);
    return PyLong_FromSsize_t(done);
}

/* Write all of `size` bytes to `fd`; 0 or -errno. */
static int write_whole(int fd, const char *data, Py_ssize_t size)
{
    Py_ssize_t put = 0;
    while (put < size) {
        ssize_t n = write(fd, data + put, (size_t)(size - put));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        put += n;
    }
    return 0;
}

/* The permission bits of the regular file `name` in `dir_fd` that a write replaces, or -1 if
 * there is none: a user's chmod survives the replacement, as an in-place rewrite keeps it (a new
 * file gets 0666 less the umask, as open() gives). */
static int kept_mode(int dir_fd, const char *name)
{
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
        return -1;
    return (int)(st.st_mode & 0777);
}

/* `size` bytes of `data` written to the new file `fd` (synced with `sync`); 0 or -errno. */
static int fill_file(int fd, const char *data, Py_ssize_t size, int sync)
{
    int err = write_whole(fd, data, size);
    if (err == 0 && sync && fsync(fd) < 0)
        err = -errno;
    return err;
}

/* Whether /proc/self/fd names this process's descriptors, which linkat needs to give an
 * unnamed file a name (AT_EMPTY_PATH needs a capability): 1, 0, or -1 before the first look. */
static int proc_fds = -1;

/* The unnamed file `fd` (O_TMPFILE) given the name `name` in `dir_fd`; 0 or -errno. */
static int link_unnamed(int fd, int dir_fd, const char *name)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, path, dir_fd, name, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
}

/* The new file `name` in `dir_fd` made to hold `data` as an unnamed file (O_TMPFILE) that is
 * then linked in: one directory entry made, where a temp file and its rename make one and move
 * it (perf, ext4: the rename and the old file's mode lookup were ~9% of the kernel time of a
 * write of 256 new chunks). When the name exists, the file is linked in as the temp file
 * `temp` instead and renamed over it. 1 when this way is not available here (file system, no
 * /proc): the caller writes the usual way; else 0 or -errno, with nothing left behind. Either
 * way but success sets `*named`: the rest of the call's files likely exist too, or are on the
 * same file system, so they go the usual way without a failed attempt each. */
static int write_unnamed(int dir_fd, const char *name, const char *temp, const char *data,
                         Py_ssize_t size, int sync, int *named)
{
#ifndef O_TMPFILE
    return 1; /* headers older than Linux 3.11 */
#else
    if (proc_fds < 0)
        proc_fds = access("/proc/self/fd", X_OK) == 0;
    if (!proc_fds)
        return 1;
    int fd;
    do {
        fd = openat(dir_fd, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0666);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        if (errno == ENOENT)
            return -ENOENT; /* the directory was removed */
        *named = 1; /* no O_TMPFILE on this file system (EOPNOTSUPP, EISDIR, ...) */
        return 1;
    }
    int err = fill_file(fd, data, size, sync);
    if (err == 0) {
        err = link_unnamed(fd, dir_fd, name);
        if (err != 0 && err != -ENOENT)
            *named = 1;
        if (err == -EEXIST) {
            int mode = kept_mode(dir_fd, name);
            err = mode >= 0 && fchmod(fd, (mode_t)mode) < 0 ? -errno
                                                             : link_unnamed(fd, dir_fd, temp);
            if (err == 0 && renameat(dir_fd, temp, dir_fd, name) < 0) {
                err = -errno;
                unlinkat(dir_fd, temp, 0);
            }
        } else if (err != 0 && err != -ENOENT) {
            err = 1; /* not linkable so: the usual way */
        }
    }
    close(fd); /* an unnamed file not linked in is freed here */
    return err;
#endif
}

/* The temp file `temp` in directory `dir_fd` made to hold `data`, then renamed over `name`
 * (with the mode of the file it replaces); 0 or -errno (the temp file removed again). */
static int write_named(int dir_fd, const char *name, const char *temp, const char *data,
                       Py_ssize_t size, int sync)
{
    int fd, err = 0;
    do {
        fd = openat(dir_fd, temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -errno;
    int mode = kept_mode(dir_fd, name);
    if (mode >= 0 && fchmod(fd, (mode_t)mode) < 0)
        err = -errno;
    if (err == 0)
        err = fill_file(fd, data, size, sync);
    if (close(fd) < 0 && err == 0 && errno != EINTR)
        err = -errno;
    if (err == 0 && renameat(dir_fd, temp, dir_fd, name) < 0)
        err = -errno;
    if (err != 0)
        unlinkat(dir_fd, temp, 0);
    return err;
}

/* `data` made the value of `name` in `dir_fd` atomically: readers see the old file or the new
 * one, never a part. `*named`: whether an earlier value of the call replaced a file or found
 * no unnamed files; then the usual way (a temp file renamed over the name) costs less than an
 * unnamed file that fails to open or to link first. 0 or -errno. */
static int write_one(int dir_fd, const char *name, const char *temp, const char *data,
                     Py_ssize_t size, int sync, int *named)
{
    int err = *named ? 1 : write_unnamed(dir_fd, name, temp, data, size, sync, named);
    return err == 1 ? write_named(dir_fd, name, temp, data, size, sync) : err;
}

PyDoc_STRVAR(write_files_doc,
"write_files(dir_fd, names, temps, values, fsync) -> (int, int)\n\n"
"For each name (a tuple of bytes: file names in the directory `dir_fd`), write its value (a\n"
"tuple of bytes-like objects) to a new file named by `temps` (created exclusively) and rename\n"
"that over the name: readers see the old file or the new one. With `fsync`, each file is\n"
"synced before its rename and the directory once after the last. Stops at the first failure,\n"
"with its temp file removed. Returns (how many were written, -errno of the failure or 0): all\n"
"written with an error means the directory's fsync failed.");

static PyObject *write_files(PyObject *self, PyObject *args)
{
    int dir_fd, sync;
    PyObject *names_arg, *temps_arg, *values_arg;
    if (!PyArg_ParseTuple(args, "iOOOp", &dir_fd, &names_arg, &temps_arg, &values_arg, &sync))
        return NULL;
    PyObject *names = PySequence_Tuple(names_arg);
    PyObject *temps = names ? PySequence_Tuple(temps_arg) : NULL;
    PyObject *values = temps ? PySequence_Tuple(values_arg) : NULL;
    const char **name_of = NULL, **temp_of = NULL;
    Py_buffer *views = NULL;
    Py_ssize_t n = 0, acquired = 0, done = 0;
    int err = 0, named = 0;
    PyObject *result = NULL;
    if (values == NULL)
        goto finish;
    n = PyTuple_GET_SIZE(names);
    if (PyTuple_GET_SIZE(temps) != n || PyTuple_GET_SIZE(values) != n) {
        PyErr_SetString(PyExc_ValueError, "names, temps and values differ in length");
        goto finish;
    }
    name_of = bytes_pointers(names, n);
    temp_of = name_of ? bytes_pointers(temps, n) : NULL;
    views = temp_of ? PyMem_Calloc(n ? n : 1, sizeof(Py_buffer)) : NULL;
    if (views == NULL) {
        if (temp_of != NULL)
            PyErr_NoMemory();
        goto finish;
    }
    for (; acquired < n; acquired++)
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(values, acquired), &views[acquired],
                               PyBUF_SIMPLE) < 0)
            goto finish;
    Py_BEGIN_ALLOW_THREADS
    for (; done < n; done++) {
        err = write_one(dir_fd, name_of[done], temp_of[done], views[done].buf, views[done].len,
                        sync, &named);
        if (err != 0)
            break;
    }
    /* Makes the names themselves durable: those given before a failure too. */
    if (done > 0 && sync && fsync(dir_fd) < 0 && err == 0)
        err = -errno;
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(ni)", done, err);
finish:
    for (Py_ssize_t i = 0; i < acquired; i++)
        PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(name_of);
    PyMem_Free(temp_of);
    Py_XDECREF(names);
    Py_XDECREF(temps);
    Py_XDECREF(values);
    return result;
}

/* Lock one byte of the lock file `lock_fd` (an open file description lock, as the store's
 * Python code takes them), or release it; 0 or -errno. */
static int lock_byte(int lock_fd, int64_t offset, short type)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = offset;
    fl.l_len = 1;
    int cmd = type == F_UNLCK ? F_OFD_SETLK : F_OFD_SETLKW;
    while (fcntl(lock_fd, cmd, &fl) < 0)
        if (errno != EINTR)
            return -errno;
    return 0;
}

/* The value written to `temp` in directory `dir_path` and renamed over `name`, while holding
 * the lock byte; 0, -errno, or -ESTALE when the lock file was deleted (it excludes nobody). */
static int replace_locked(const char *dir_path, const char *name, const char *temp,
                          const char *data, Py_ssize_t size, int sync, int lock_fd,
                          int64_t offset)
{
    struct stat st;
    int err = lock_byte(lock_fd, offset, F_WRLCK);
    if (err != 0)
        return err;
    if (fstat(lock_fd, &st) < 0)
        err = -errno;
    else if (st.st_nlink == 0)
        err = -ESTALE;
    else {
        int dir_fd = open_no_symlinks(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
            err = -errno;
        else {
            int named = 0;
            err = write_one(dir_fd, name, temp, data, size, sync, &named);
            if (err == 0 && sync && fsync(dir_fd) < 0) /* makes the rename durable */
                err = -errno;
            close(dir_fd);
        }
    }
    int unlocked = lock_byte(lock_fd, offset, F_UNLCK);
    return err != 0 ? err : unlocked;
}

PyDoc_STRVAR(replace_file_doc,
"replace_file(dir_path, name, temp, value, fsync, lock_fd, lock_offset) -> int\n\n"
"Under the open file description lock of byte `lock_offset` of `lock_fd` (waited for, and\n"
"released after): open the directory `dir_path` (an absolute path, through no symbolic link),\n"
"write `value` to a new file `temp` there and rename it over `name` (with `fsync`, the file\n"
"before its rename and the directory after). Returns 0, or -errno of what failed, with\n"
"nothing written: -ESTALE if the lock file was deleted (its lock excludes nobody).");

static PyObject *replace_file(PyObject *self, PyObject *args)
{
    const char *dir_path, *name, *temp;
    Py_buffer value;
    int sync, lock_fd, err;
    long long offset;
    if (!PyArg_ParseTuple(args, "yyyy*piL", &dir_path, &name, &temp, &value, &sync, &lock_fd,
                          &offset))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    err = replace_locked(dir_path, name, temp, value.buf, value.len, sync, lock_fd, offset);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&value);
    return PyLong_FromLong(err);
}

PyDoc_STRVAR(unnamed_files_doc,
"unnamed_files(use) -> bool\n\n"
"Whether writes make a new file as an unnamed file linked in once written (O_TMPFILE), where\n"
"this system allows it, or always as a temp file renamed over the name; the previous setting.\n"
"Both are atomic (for tests of the second way, which other file systems take).");

static PyObject *unnamed_files(PyObject *self, PyObject *args)
{
    int use;
    if (!PyArg_ParseTuple(args, "p", &use))
        return NULL;
    int was = proc_fds != 0;
    proc_fds = use ? -1 : 0;
    return PyBool_FromLong(was);
}

static PyMethodDef methods[] = {
    {"unnamed_files", unnamed_files, METH_VARARGS, unnamed_files_doc},
    {"replace_file", replace_file, METH_VARARGS, replace_file_doc},
    {"read_files", read_files, METH_VARARGS, read_files_doc},
    {"write_files", write_files, METH_VARARGS, write_files_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "zarrkit.kvstore._fileio",
    "Batches of small-file reads and atomic writes without the GIL (see the file store).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__fileio(void) { return PyModule_Create(&module); }
