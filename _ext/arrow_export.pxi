# A record batch handed to Arrow in one call, through the Arrow C data
# interface (https://arrow.apache.org/docs/format/CDataInterface.html), included
# textually by the batch decoders.  A decoder fills one child ArrowArray per
# column with pointers into buffers it owns (numpy arrays, malloc'd text, the
# buffers of a pa.Array) and imports the whole batch with
# ``pa.RecordBatch._import_from_c``: ``pa.py_buffer`` + ``pa.Array.from_buffers``
# + ``RecordBatch.from_arrays`` cost about 3.3 us a column, the import a small
# fraction of that (BENCHMARKS.md, "Small calls").
#
# Lifetime: the Python objects that own the buffers are kept in a list the
# batch's release callback drops (with the GIL: Arrow releases a batch on
# whichever thread drops it last).  Arrow moves the parent struct and never
# releases the children by themselves: the parent's release frees them all.
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF
from libc.stdint cimport uint64_t, uintptr_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy, memset

cdef extern from "Python.h":
    int Py_IsInitialized() nogil


cdef struct ArrowArray:
    int64_t length
    int64_t null_count
    int64_t offset
    int64_t n_buffers
    int64_t n_children
    const void** buffers
    ArrowArray** children
    ArrowArray* dictionary
    void (*release)(ArrowArray*) noexcept nogil
    void* private_data


cdef struct _Exported:
    ArrowArray* children
    ArrowArray** child_ptrs
    const void** bufs
    PyObject* owners


cdef void _release_child(ArrowArray* a) noexcept nogil:
    a.release = NULL          # (its memory is its parent's)


cdef void _free_exported(_Exported* p, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n if p.children != NULL else 0):   # (pyarrow's own exports among them: nested columns)
        if p.children[i].release != NULL:
            p.children[i].release(&p.children[i])
    free(p.children)
    free(p.child_ptrs)
    free(p.bufs)
    if p.owners != NULL and Py_IsInitialized():
        with gil:
            Py_DECREF(<object>p.owners)
    free(p)


cdef void _release_batch(ArrowArray* a) noexcept nogil:
    _free_exported(<_Exported*>a.private_data, a.n_children)
    a.release = NULL


cdef class BatchExport:
    """The columns of one record batch of ``n`` rows and ``ncols`` columns,
    set one by one (:meth:`column`, :meth:`array`, :meth:`nested`;
    :meth:`nulls` for the rest), then imported as a ``pa.RecordBatch`` of a given schema
    (:meth:`batch`, once)."""
    cdef _Exported* p
    cdef Py_ssize_t ncols
    cdef int64_t n
    cdef list owners
    cdef uint8_t* filled

    def __cinit__(self, Py_ssize_t ncols, int64_t n):
        self.ncols = ncols
        self.n = n
        self.owners = []
        self.p = <_Exported*>calloc(1, sizeof(_Exported))
        if self.p == NULL:
            raise MemoryError()
        self.p.children = <ArrowArray*>calloc(ncols + 1, sizeof(ArrowArray))
        self.p.child_ptrs = <ArrowArray**>calloc(ncols + 1, sizeof(ArrowArray*))
        self.p.bufs = <const void**>calloc(3 * ncols + 1, sizeof(void*))
        self.filled = <uint8_t*>calloc(ncols + 1, 1)
        if self.p.children == NULL or self.p.child_ptrs == NULL or self.p.bufs == NULL or self.filled == NULL:
            raise MemoryError()

    def __dealloc__(self):
        if self.p != NULL:       # never handed to Arrow
            _free_exported(self.p, self.ncols)
        free(self.filled)

    cdef void column(self, Py_ssize_t i, int64_t null_count, int nbuf, const void* validity,
                     const void* b1, const void* b2) noexcept:
        """Column ``i``: ``nbuf`` buffers (2: validity and values; 3: validity,
        offsets and data), ``validity`` NULL where ``null_count`` is 0.  The
        caller keeps (:meth:`keep`) what owns the buffers."""
        cdef ArrowArray* c = &self.p.children[i]
        c.length = self.n
        c.null_count = null_count
        c.offset = 0
        c.n_buffers = nbuf
        c.n_children = 0
        c.buffers = self.p.bufs + 3 * i
        c.buffers[0] = validity if null_count else NULL
        c.buffers[1] = b1
        c.buffers[2] = b2
        c.children = NULL
        c.dictionary = NULL
        c.release = _release_child
        c.private_data = NULL
        self.p.child_ptrs[i] = c
        self.filled[i] = 1

    cdef keep(self, obj):
        self.owners.append(obj)

    cdef int array(self, Py_ssize_t i, arr) except -1:
        """Column ``i``: a ``pa.Array`` of a flat type (primitive, binary,
        string, fixed-size binary), zero-copy."""
        cdef list bufs = arr.buffers()
        cdef const void* ptr[3]
        cdef Py_ssize_t k
        if len(bufs) > 3:
            raise TypeError("BatchExport.array: a flat array, not %s" % arr.type)
        for k in range(3):
            ptr[k] = <const void*><uintptr_t>bufs[k].address if k < len(bufs) and bufs[k] is not None else NULL
        self.column(i, arr.null_count, len(bufs), ptr[0], ptr[1], ptr[2])
        self.p.children[i].offset = arr.offset
        self.owners.append(arr)
        return 0

    cdef int nested(self, Py_ssize_t i, arr) except -1:
        """Column ``i``: any ``pa.Array`` (a list column), exported by pyarrow
        itself (released with the batch)."""
        if self.filled[i]:
            raise ValueError("BatchExport: column %d set twice" % i)
        arr._export_to_c(<uintptr_t>&self.p.children[i])
        self.p.child_ptrs[i] = &self.p.children[i]
        self.filled[i] = 1
        return 0

    cdef int nulls(self, schema, const uint8_t[::1] layouts, const void* zeros) except -1:
        """Every column not set: all null, each buffer ``zeros`` (at least
        ``24 n + 64`` zero bytes, which the caller keeps); ``layouts``: the
        schema's :func:`null_layouts`."""
        cdef Py_ssize_t i
        for i in range(self.ncols):
            if not self.filled[i]:
                if layouts[i] == 3:
                    self.column(i, self.n, 3, zeros, zeros, zeros)
                elif layouts[i] == 2:
                    self.column(i, self.n, 2, zeros, zeros, NULL)
                else:
                    self.array(i, pa.nulls(self.n, schema.field(i).type))
        return 0

    cdef batch(self, schema):
        """The record batch (the columns are handed over: call once)."""
        cdef ArrowArray parent
        cdef Py_ssize_t i
        for i in range(self.ncols):
            if not self.filled[i]:
                raise ValueError("BatchExport: column %d (%s) was not set" % (i, schema.field(i).name))
        memset(&parent, 0, sizeof(ArrowArray))
        parent.length = self.n
        parent.n_buffers = 1
        parent.buffers = self.p.bufs + 3 * self.ncols     # the struct's validity: none
        parent.n_children = self.ncols
        parent.children = self.p.child_ptrs
        parent.release = _release_batch
        parent.private_data = self.p
        Py_INCREF(self.owners)
        self.p.owners = <PyObject*>self.owners
        self.p = NULL            # Arrow's from here, imported or not: it releases it even when the import fails
        return pa.RecordBatch._import_from_c(<uintptr_t>&parent, schema)


def null_layouts(schema):
    """For each field of ``schema``, how :meth:`BatchExport.nulls` builds it
    all null from zeroed buffers: 3 (validity, 32-bit offsets, data: string and
    binary), 2 (validity and values: booleans, integers, fixed-size binary) or
    0 (``pa.nulls``).  Worked out once per schema, not once per call."""
    out = bytearray(len(schema))
    for i, f in enumerate(schema):
        t = f.type
        if pa.types.is_string(t) or pa.types.is_binary(t):
            out[i] = 3
        elif pa.types.is_boolean(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_integer(t):
            out[i] = 2
    return bytes(out)


import sys as _sys
cdef bint _LITTLE_ENDIAN = _sys.byteorder == "little"


cdef inline void pack_bits(const uint8_t* mask, Py_ssize_t n, uint8_t* out) noexcept nogil:
    """An Arrow bitmap (LSB first) of ``n`` bytes: a bit set for each byte that
    is not 0.  Eight bytes at a time: each made 0 or 1 within itself, then
    gathered into the top byte by one multiplication (a little-endian load puts
    byte j at bit 8j; the constant's term 2^(56-7j) moves it to bit 56+j;
    a big-endian host packs byte by byte).  ``out`` may be ``mask`` itself: each
    output byte is written after the bytes it is made of were read."""
    cdef Py_ssize_t i, j
    cdef uint64_t x
    cdef uint8_t b
    if not _LITTLE_ENDIAN:
        for i in range(0, n, 8):
            b = 0
            for j in range(i, min(i + 8, n)):
                b |= <uint8_t>((mask[j] != 0) << (j - i))
            out[i >> 3] = b
        return
    for i in range(0, n - 7, 8):
        memcpy(&x, mask + i, 8)
        x |= (x >> 4) & 0x0F0F0F0F0F0F0F0FULL
        x |= (x >> 2) & 0x3333333333333333ULL
        x |= (x >> 1) & 0x5555555555555555ULL
        x &= 0x0101010101010101ULL
        out[i >> 3] = <uint8_t>((x * 0x0102040810204080ULL) >> 56)
    i = n & ~(<Py_ssize_t>7)
    if i < n:
        b = 0
        for j in range(i, n):
            b |= <uint8_t>((mask[j] != 0) << (j - i))
        out[i >> 3] = b


cdef inline int64_t count_set(const uint8_t* mask, Py_ssize_t n) noexcept nogil:
    """How many of the ``n`` bytes are not 0: eight at a time, each made 0 or 1
    within itself (as in :func:`pack_bits`), then summed by one multiplication
    (the top byte of x * 0x0101010101010101 is the sum of x's bytes)."""
    cdef Py_ssize_t i
    cdef uint64_t x
    cdef int64_t c = 0
    for i in range(0, n - 7, 8):
        memcpy(&x, mask + i, 8)
        x |= (x >> 4) & 0x0F0F0F0F0F0F0F0FULL
        x |= (x >> 2) & 0x3333333333333333ULL
        x |= (x >> 1) & 0x5555555555555555ULL
        x &= 0x0101010101010101ULL
        c += <int64_t>((x * 0x0101010101010101ULL) >> 56)
    for i in range(n & ~(<Py_ssize_t>7), n):
        c += mask[i] != 0
    return c
