"""Print size of a saved figure read from its PDF: page width (inches) and every font size (pt)."""

from __future__ import annotations

import re
import zlib
from pathlib import Path


def pdf_print_size(path) -> tuple[float, float, list[float]]:
    """(width_in, height_in, font sizes in pt) of a one-page matplotlib PDF."""
    data = Path(path).read_bytes()
    box = re.search(rb"/MediaBox \[\s*([\d.\-]+) ([\d.\-]+) ([\d.\-]+) ([\d.\-]+)\s*\]", data)
    x0, y0, x1, y1 = (float(v) for v in box.groups())
    sizes = []
    for stream in re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", data, re.S):
        try:
            text = zlib.decompress(stream.group(1))
        except zlib.error:
            text = stream.group(1)
        sizes += [float(v) for v in re.findall(rb"/F\d+ ([\d.]+) Tf", text)]
    return (x1 - x0) / 72, (y1 - y0) / 72, sizes
