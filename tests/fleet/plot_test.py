#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""--plot IMAGE: `run` and live mode draw a target of known shape, and
the picture says so: in the PNG, the column of one moment has the
running+runnable, idle-in-cond and idle-in-io layers in the heights of
1, 3 and 1 threads (fleet_target 1 spinner, 3 sleepers, main in poll).
The PNG is decoded here (zlib and the PNG filters; no imaging library
needed); the SVG is parsed as XML."""

import os
import re
import struct
import tempfile
import unittest
import xml.etree.ElementTree as ElementTree
import zlib

import fleet

# The layer colours of plot.c, as 8-bit RGB.
def rgb(r, g, b):
    return tuple(round(c * 255) for c in (r, g, b))


RUNNING = rgb(0.13, 0.55, 0.13)
WAITING = rgb(0.60, 0.85, 0.45)
COND = rgb(0.12, 0.47, 0.71)
IO = rgb(0.09, 0.75, 0.81)
SLEEP = rgb(0.62, 0.85, 0.90)


def read_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as image:
        data = image.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, idat, header = 8, b"", None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xff
            elif kind == 2:
                line[i] = (line[i] + up) & 0xff
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xff
            elif kind == 4:
                estimate = left + up - corner
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + predictor) & 0xff
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        previous = line
    return width, height, rows


def close(a, b):
    return all(abs(x - y) <= 3 for x, y in zip(a, b))


def column_heights(rows, x):
    """Pixels of each layer colour in column x."""
    heights = {}
    for name, colour in (("running", RUNNING), ("waiting", WAITING), ("cond", COND), ("io", IO),
                         ("sleep", SLEEP)):
        heights[name] = sum(1 for row in rows if close(row[x], colour))
    return heights


class Plot(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.directory.cleanup()

    def path(self, name):
        return os.path.join(self.directory.name, name)

    def check_shape(self, path, idle_main):
        """The middle column: layers of 1 (runnable), 3 (cond) and 1
        (main: idle_main) threads, the same number of pixels per thread."""
        width, height, rows = read_png(path)
        self.assertEqual((width, height), (1000, 520))
        heights = column_heights(rows, 60 + (1000 - 60 - 150) // 2)
        runnable = heights["running"] + heights["waiting"]
        per_thread = heights["cond"] / 3
        self.assertGreater(per_thread, 20, heights)
        self.assertAlmostEqual(runnable / per_thread, 1.0, delta=0.2, msg=heights)
        self.assertAlmostEqual(heights[idle_main] / per_thread, 1.0, delta=0.2, msg=heights)

    def test_run_draws_the_shape(self):
        png = self.path("run.png")
        result = fleet.tdstat("run", "--plot", png, "--", fleet.FLEET_TARGET, "-t", "1500", "1", "3")
        self.assertIn("Thread statistics", result.stderr)
        # Main sleeps in nanosleep under -t.
        self.check_shape(png, "sleep")

    def test_live_mode_draws_the_shape(self):
        png = self.path("live.png")
        with fleet.Target(spinners=1, sleepers=3) as target:
            fleet.tdstat("-i", "0.2", "-c", "8", "--plot", png, target.pid)
        self.check_shape(png, "io")

    def test_svg(self):
        svg = self.path("run.svg")
        fleet.tdstat("run", "--plot", svg, "-i", "0.05", "--", fleet.FLEET_TARGET, "-t", "500", "0", "2")
        root = ElementTree.parse(svg).getroot()
        self.assertEqual(root.tag, "{http://www.w3.org/2000/svg}svg")
        with open(svg) as image:
            text = image.read()
        fills = set(re.findall(r"fill:rgb\(([\d.]+)%,([\d.]+)%,([\d.]+)%\)", text))
        colours = {rgb(*(float(c) / 100 for c in fill)) for fill in fills}
        self.assertTrue(any(close(c, COND) for c in colours), "no cond layer in %s" % colours)

    def test_errors(self):
        result = fleet.tdstat("run", "--plot", self.path("x.gif"), "--", "true", check=False)
        self.assertEqual(result.returncode, 2)
        self.assertIn(".png or .svg", result.stderr)
        self.assertEqual(fleet.tdstat("run", "-i", "0.1", "--", "true", check=False).returncode, 2)
        # An image that cannot be written: said, and the command's status kept.
        result = fleet.tdstat("run", "--plot", self.path("no/such/dir.png"), "--", "sh", "-c", "exit 3",
                              check=False)
        self.assertEqual(result.returncode, 3)
        self.assertIn("cannot write the plot", result.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
