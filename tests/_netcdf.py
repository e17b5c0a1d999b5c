"""netCDF-C (through netCDF4-python) writing and reading Zarr stores, run as its own program by
test_netcdf_interop.py: netCDF4 and h5py each carry an HDF5 library, which must not meet in one
process. `python _netcdf.py write PATH MODE` writes the variables below; `read PATH MODE`
pickles {path: (values, dimensions, attributes)} of every variable, and the root's attributes
under "", to stdout. MODE is "zarr" (plain Zarr v2, xarray's dimension attribute) or "nczarr"
(netCDF's own metadata besides)."""

import pickle
import sys

import netCDF4
import numpy as np


def _var(ds, name, dtype, dims, data, **kw):
    v = ds.createVariable(name, dtype, dims, **kw)
    v.set_auto_mask(False)
    v[...] = data
    return v


def write(path, mode):
    ds = netCDF4.Dataset(f"file://{path}#mode={mode},file", "w")
    ds.createDimension("t", None)
    ds.createDimension("y", 5)
    ds.createDimension("x", 4)
    ds.history = "written by netCDF-C"
    grid = np.arange(20).reshape(5, 4)
    _var(ds, "plain", "f8", ("y", "x"), grid / 4).units = "K"
    _var(ds, "unlimited", "i2", ("t", "x"), np.arange(12).reshape(3, 4), chunksizes=(2, 2))
    _var(ds, "fletcher32", "i4", ("y", "x"), grid, fletcher32=True)
    _var(ds, "zstd", "u2", ("y", "x"), grid, compression="zstd", chunksizes=(2, 4))
    # zlib with shuffle: netCDF-C writes the shuffle filter's element size as 0
    _var(ds, "big_shuffled", "i4", ("y", "x"), grid * 1000, endian="big", zlib=True)
    _var(ds, "without_fill", "f4", ("y",), np.arange(5.0), fill_value=False)
    masked = np.ma.masked_array(grid * 1.5, mask=grid % 3 == 0)
    _var(ds, "default_fill", "f4", ("y", "x"), masked)  # netCDF's default fill where masked
    _var(ds, "quantized", "f4", ("y", "x"), np.linspace(0, 1, 20).reshape(5, 4),
         significant_digits=3)
    _var(ds, "bytes", "u1", ("x",), np.array([1, 2, 3, 250], "u1"))
    inner = ds.createGroup("grp").createGroup("inner")
    inner.createDimension("z", 3)
    _var(inner, "z", "f8", ("z",), [1.5, 2.5, 3.5]).units = "m"
    ds.close()


def read(path, mode):
    ds = netCDF4.Dataset(f"file://{path}#mode={mode},file", "r")
    out = {"": {k: ds.getncattr(k) for k in ds.ncattrs()}}

    def walk(group, prefix):
        for name, v in group.variables.items():
            v.set_auto_mask(False)
            out[prefix + name] = (np.asarray(v[...]), v.dimensions,
                                  {k: v.getncattr(k) for k in v.ncattrs()})
        for name, sub in group.groups.items():
            walk(sub, prefix + name + "/")

    walk(ds, "")
    ds.close()
    pickle.dump(out, sys.stdout.buffer)


if __name__ == "__main__":
    {"write": write, "read": read}[sys.argv[1]](sys.argv[2], sys.argv[3])
