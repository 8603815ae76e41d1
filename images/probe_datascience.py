"""Finds what the datascience image must contain, by using it.

Run by `codemode image build --variant datascience` with Debian's
/usr/bin/python3.11 -I -S (no site: no .pth side effects). It imports numpy,
pandas and matplotlib and exercises the common paths a model's data work
takes, then prints one JSON object on stdout:
  modules:   every loaded module file (the build keeps those under
             dist-packages, and the whole Debian packages that own them);
  opened:    every file opened through Python (fonts, rc files, tz data);
  data_dirs: directories the libraries read lazily (matplotlib's data path).
"""

import io
import json
import os
import sys

DIST_PACKAGES = "/usr/lib/python3/dist-packages"
sys.path.append(DIST_PACKAGES)

opened = set()


def audit(event, args):
    if event == "open" and args and isinstance(args[0], str):
        opened.add(os.path.abspath(args[0]))


sys.addaudithook(audit)

import numpy  # noqa: E402
import pandas  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rng = numpy.random.default_rng(0)
values = rng.normal(size=200)
numpy.linalg.inv(numpy.eye(3) * 2.0)
numpy.fft.fft(values)

frame = pandas.DataFrame(
    {
        "x": numpy.arange(200),
        "y": values,
        "group": ["a", "b"] * 100,
        "t": pandas.date_range("2024-01-01", periods=200, freq="h", tz="Europe/Paris"),
    }
)
frame.describe()
frame.groupby("group").agg({"y": ["mean", "std"]})
frame.pivot_table(index="group", values="y", aggfunc="sum")
frame.set_index("t")["y"].resample("D").mean().rolling(2).mean()
pandas.read_csv(io.StringIO(frame.to_csv(index=False)))
pandas.read_json(io.StringIO(frame.to_json()))
frame.to_string()
frame.to_html()

figure, axes = plt.subplots(2, 3)
axes[0, 0].plot(values)
axes[0, 1].scatter(values[:-1], values[1:], c=values[1:])
axes[0, 2].hist(values, bins=20)
axes[1, 0].bar(["a", "b"], [1, 2])
grid = numpy.add.outer(numpy.linspace(-1, 1, 20), numpy.linspace(-1, 1, 20))
axes[1, 1].contourf(grid)
axes[1, 1].contour(grid)
axes[1, 2].imshow(grid)
axes[1, 2].set_title(r"$\alpha^2$ mathtext")
frame.plot(x="x", y="y", ax=axes[0, 0])
frame["y"].plot.box(ax=axes[1, 0])
figure.tight_layout()
for fmt in ("png", "svg", "pdf", "jpg"):
    figure.savefig(io.BytesIO(), format=fmt)
plt.close("all")

modules = sorted(
    {getattr(module, "__file__", None) or "" for module in list(sys.modules.values())} - {""}
)
json.dump(
    {"modules": modules, "opened": sorted(opened), "data_dirs": [matplotlib.get_data_path()]},
    sys.stdout,
)
