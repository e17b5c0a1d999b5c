"""`zarrkit convert`: copy a hierarchy to another format, or upgrade v2/v1 to v3 in place.

    zarrkit convert SRC DST [--zarr-format 3] [--chunks 64,64] [--shards 512,512]
                            [--codecs JSON] [--overwrite] [--quiet] [--json]
    zarrkit convert --in-place PATH [--keep-v2-metadata] [--quiet] [--json]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .array import Array
from .codecs import NUMCODECS_PREFIX
from .conversion import convert, upgrade_metadata, walk
from .errors import SpecError


def _shape(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise SpecError(f"expected comma-separated integers such as 64,64, got {text!r}") from None


def parse_codecs(text: str | None) -> Any:
    """`--codecs`: a JSON array of v3 codecs (a bare string or object would be split up)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise SpecError(f"--codecs: not valid JSON: {e}") from None
    if not isinstance(value, list):
        raise SpecError(f"--codecs must be a JSON array of codecs, such as "
                        f"'[{{\"name\": \"bytes\"}}]', got {text!r}")
    return value


def _run(args: argparse.Namespace) -> int:
    quiet = args.quiet or args.json  # a progress bar would garble the JSON
    if args.in_place:
        if args.dst is not None or args.chunks or args.shards or args.codecs:
            raise SpecError("--in-place rewrites metadata only: it takes one PATH and no "
                            "--chunks/--shards/--codecs")
        node = upgrade_metadata(args.src, keep_v2_metadata=args.keep_v2_metadata,
                                progress=not quiet)
    else:
        if args.dst is None:
            raise SpecError("convert needs SRC and DST (or --in-place PATH)")
        node = convert(args.src, args.dst, zarr_format=args.zarr_format,
                       chunks=_shape(args.chunks), shards=_shape(args.shards),
                       codecs=parse_codecs(args.codecs), overwrite=args.overwrite,
                       progress=not quiet)
    where = args.dst or args.src
    if args.json:
        print(json.dumps({"path": where, "node": node.name, "zarr_format": node.zarr_format,
                          "numcodecs_arrays": _numcodecs_arrays(node)}, indent=2))
    elif not args.quiet:
        print(f"{node.name}: Zarr v{node.zarr_format} at {where}")
        _note_numcodecs(node)
    return 0


def _numcodecs_arrays(node: Any) -> list[str]:
    """The arrays (paths below `node`) that use zarr-python's numcodecs.* codecs."""
    return [rel or "/" for rel, n in walk(node) if isinstance(n, Array) and n.zarr_format == 3
            and any(c["name"].startswith(NUMCODECS_PREFIX) for c in n.metadata["codecs"])]


def _note_numcodecs(node: Any) -> None:
    """Name the arrays an upgrade gave zarr-python's numcodecs.* codecs: readers that keep to
    the v3 specification (TensorStore) cannot read them."""
    found = _numcodecs_arrays(node)
    if found:
        print(f"note: {len(found)} array(s) use numcodecs.* codecs, outside the Zarr v3 "
              f"specification (zarrkit and zarr-python read them; TensorStore does not): "
              f"{', '.join(found)}")


def add_convert_command(sub: Any) -> None:
    """Register the `convert` subcommand on an argparse subparsers object."""
    p = sub.add_parser("convert", help="copy to another Zarr format (or upgrade in place)")
    p.add_argument("src", help="the source array or group (any format)")
    p.add_argument("dst", nargs="?", help="where to write the copy")
    p.add_argument("--zarr-format", type=int, choices=(2, 3), default=3)
    p.add_argument("--chunks", help="chunk shape of every array, e.g. 64,64")
    p.add_argument("--shards", help="shard shape of every array (v3), e.g. 512,512")
    p.add_argument("--codecs", help="v3 codec list as JSON (the inner codecs when sharded)")
    p.add_argument("--overwrite", action="store_true", help="replace what exists at DST")
    p.add_argument("--in-place", action="store_true",
                   help="upgrade v2/v1 metadata to v3 without copying chunks")
    p.add_argument("--keep-v2-metadata", action="store_true",
                   help="with --in-place: keep .zarray/.zgroup/.zattrs next to zarr.json")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.add_argument("--json", action="store_true", help="print a JSON summary (no progress bar)")
    p.set_defaults(func=_run)
