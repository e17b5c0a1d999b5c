"""GDAL's Zarr driver (through rasterio's wheel, GDAL 3.10) writing and reading 2-D arrays, run
as its own program by test_gdal_interop.py (its bundled libraries stay out of the tests'
process). `python _gdal.py write PATH FORMAT COMPRESS` writes a 5 x 7 float32 raster of
0..34 in 2 x 3 blocks, nodata -1; `read PATH ARRAY` pickles (values, nodata) to stdout."""

import pickle
import sys
import warnings

import numpy as np
import rasterio
from rasterio.transform import from_origin


def write(path, fmt, compress):
    with rasterio.open(path, "w", driver="Zarr", width=7, height=5, count=1, dtype="float32",
                       FORMAT=fmt, BLOCKSIZE="2,3", COMPRESS=compress, nodata=-1,
                       transform=from_origin(10, 20, 1, 1), crs="EPSG:4326") as dst:
        dst.write(np.arange(35, dtype="f4").reshape(5, 7), 1)


def read(path, array):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "not georeferenced"
        with rasterio.open(f'ZARR:"{path}":/{array}') as src:
            pickle.dump((src.read(1), src.nodata), sys.stdout.buffer)


if __name__ == "__main__":
    {"write": write, "read": read}[sys.argv[1]](*sys.argv[2:])
