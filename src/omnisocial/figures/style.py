"""Shared style and the deterministic save of every figure.

- Figures are `matplotlib.figure.Figure` objects drawn on an Agg canvas; pyplot's global
  state is never touched (no open-figure registry, no interactive backend).
- `RC` fixes every rcParam the figures depend on (font, sizes, DPI, hash salt, PDF font
  type), and figure functions run inside `styled()` so the user's matplotlibrc cannot change
  the output.
- `save_figure` writes `<stem>.png` and `<stem>.pdf` atomically (omnisocial.io.atomic_path)
  without time stamps or software versions in the metadata, so the same inputs give the same
  bytes (PNG certainly; PDF too with a fixed matplotlib version).
- `new_figure` lays out a grid of panels in inches with room for a title, a subtitle and a
  wrapped caption. A subtitle flags simulated data (`simulated_note`): figure functions take
  `simulated=None` and look for "simulated" in the `source` column of their input tables.
"""

from __future__ import annotations

import contextlib
import logging
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.transforms import ScaledTranslation, Transform

from omnisocial.io import atomic_path
from omnisocial.tables import SIMULATED_LABEL

log = logging.getLogger(__name__)

MODALITIES = ("text", "audio", "video")
MODALITY_COLORS = {"text": "#4C72B0", "audio": "#DD8452", "video": "#55A868"}
CLASS_COLORS = {"familiar": "#8172B3", "stranger": "#C44E52"}
HUMAN_COLOR = "#7F7F7F"
CROWD_COLOR = "#222222"
FLAG_COLOR = "#B00020"  # a warning: the SIMULATED DATA subtitle, a fit that did not converge
MODEL_COLORS = (
    "#1F77B4",
    "#FF7F0E",
    "#2CA02C",
    "#D62728",
    "#9467BD",
    "#8C564B",
    "#E377C2",
    "#17BECF",
    "#BCBD22",
)
MODEL_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">")
# the same markers as text (DejaVu Sans has them), for keys written beside a panel
MARKER_GLYPHS = dict(
    zip(MODEL_MARKERS, "\u25cf\u25a0\u25c6\u25b2\u25bc\u271a\u2716\u25c0\u25b6", strict=True)
)
DPI = 200
# a journal page: figures at most this wide at print size (inches), no text smaller (points)
MAX_WIDTH_IN = 7.2
MIN_FONT_PT = 7.0
_SAVE_PAD_IN = 0.1
SIMULATED_WORD = "simulated"

RC = {
    "font.family": "DejaVu Sans",
    "font.size": 8.5,
    "axes.titlesize": 9.5,
    "axes.labelsize": 8.5,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 7.5,
    "legend.title_fontsize": 7.5,
    "figure.titlesize": 9.5,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "axes.unicode_minus": True,
    "lines.linewidth": 1.4,
    "lines.markersize": 5,
    "figure.dpi": 100,
    "savefig.dpi": DPI,
    "savefig.facecolor": "white",
    "figure.facecolor": "white",
    "text.usetex": False,
    "svg.hashsalt": "omnisocial",
    "svg.fonttype": "path",
    "pdf.fonttype": 42,
    "pdf.compression": 6,
    "path.simplify": True,
    "image.interpolation": "nearest",
    "hatch.linewidth": 0.8,
}
PNG_METADATA = {"Software": None}
PDF_METADATA = {"CreationDate": None, "ModDate": None, "Creator": None, "Producer": None}
# what save_figure writes (the config's figures.formats); the report shows the PNG, always made
FORMAT_METADATA = {"png": PNG_METADATA, "pdf": PDF_METADATA, "svg": {"Date": None, "Creator": None}}
FORMATS = ("png", "pdf")

_TITLE_IN = 0.32
_SUBTITLE_IN = 0.2
_LINE_IN = 0.15
_TOP_PAD_IN = 0.12


# what the config's `figures:` block may set (the figure rules' params), and the defaults
FIGURE_DEFAULTS = {
    "dpi": DPI,
    "font_size": RC["font.size"],
    "max_width_in": MAX_WIDTH_IN,
    "palette": MODEL_COLORS,
    "formats": FORMATS,
}
_FONT_KEYS = {key: value for key, value in RC.items() if key.endswith("size") and key != "lines.markersize"}


def configure(settings: Mapping | None = None) -> None:
    """Apply the config's `figures:` settings (None or {}: the defaults): `dpi` of the PNG,
    `font_size` (the base size; titles, ticks and legends scale with it, never under
    MIN_FONT_PT), `max_width_in` (the widest a saved figure may be) and `palette` (the models'
    colours, in order) and `formats` (the files `save_figure` writes: png and any of pdf, svg).
    Every figure rule calls it with its params first."""
    global DPI, MAX_WIDTH_IN, MODEL_COLORS, FORMATS
    merged = {**FIGURE_DEFAULTS, **{k: v for k, v in dict(settings or {}).items() if v not in (None, [], "")}}
    unknown = set(merged) - set(FIGURE_DEFAULTS)
    if unknown:
        raise ValueError(f"figures: unknown setting(s) {', '.join(sorted(unknown))}")
    DPI = int(merged["dpi"])
    MAX_WIDTH_IN = float(merged["max_width_in"])
    MODEL_COLORS = tuple(merged["palette"])
    FORMATS = figure_formats(merged["formats"])
    scale = float(merged["font_size"]) / FIGURE_DEFAULTS["font_size"]
    RC.update({key: max(MIN_FONT_PT, value * scale) for key, value in _FONT_KEYS.items()})
    RC["savefig.dpi"] = DPI


@contextlib.contextmanager
def styled() -> Iterator[None]:
    """The project's fixed rcParams, on top of matplotlib's defaults (not the user's rc file)."""
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(RC)
        yield


def is_simulated(*tables) -> bool:
    """True when any table's `source` column mentions 'simulated' (case-insensitive)."""
    for table in tables:
        if (
            isinstance(table, pd.DataFrame)
            and "source" in table.columns
            and table["source"].astype(str).str.contains(SIMULATED_WORD, case=False).any()
        ):
            return True
    return False


def simulated_note(
    simulated: bool | None, *tables, label: str = SIMULATED_LABEL, instead_of: str = "ratings"
) -> str:
    """'' for real data; else the demo label the subtitle must carry.

    `label` names what was simulated and `instead_of` what real data it stands for (the
    default: the rater panel instead of ratings; the social demo's generated clips say so)."""
    flag = is_simulated(*tables) if simulated is None else bool(simulated)
    return f"SIMULATED DATA: {label}, not real {instead_of}" if flag else ""


def full_subtitle(
    subtitle: str, simulated: bool | None, *tables, label: str = SIMULATED_LABEL, instead_of: str = "ratings"
) -> str:
    note = simulated_note(simulated, *tables, label=label, instead_of=instead_of)
    return " | ".join(part for part in (note, subtitle) if part)


# what the SIMULATED note names for the social demo (social.source: demo)
SOCIAL_DEMO_LABEL = "generated social demo clips (social.source: demo)"
SOCIAL_DEMO_INSTEAD_OF = "recordings"


def social_subtitle(subtitle: str, simulated: bool | None, *tables) -> str:
    """The subtitle with the social demo's SIMULATED note in front when the inputs are generated."""
    note = {"label": SOCIAL_DEMO_LABEL, "instead_of": SOCIAL_DEMO_INSTEAD_OF}
    return full_subtitle(subtitle, simulated, *tables, **note)


def _wrap(text: str, width_in: float) -> list[str]:
    if not text:
        return []
    chars = max(20, int(min(width_in, MAX_WIDTH_IN) * 15))
    return [line for paragraph in text.splitlines() for line in (textwrap.wrap(paragraph, chars) or [""])]


def new_figure(
    nrows: int = 1,
    ncols: int = 1,
    *,
    panel_size: tuple[float, float] = (3.2, 2.6),
    title: str = "",
    subtitle: str = "",
    caption: str = "",
    sharex: bool = False,
    sharey: bool = False,
    left_in: float = 0.6,
    right_in: float = 0.15,
    bottom_in: float = 0.5,
    wspace_in: float = 0.55,
    hspace_in: float = 0.6,
    max_width_in: float = MAX_WIDTH_IN - 1.4,
) -> tuple[Figure, np.ndarray]:
    """A Figure on an Agg canvas with an nrows x ncols grid of axes (2-D array, always).

    Panels are narrowed so the grid is at most `max_width_in` wide (default: a 7.2 in page
    less room for a legend at the right); `save_figure` then fits the whole drawing, legends
    included, into MAX_WIDTH_IN."""
    panel_w, panel_h = panel_size
    width = left_in + ncols * panel_w + (ncols - 1) * wspace_in + right_in
    if width > max_width_in:
        # narrower panels, same margins and text sizes: the figure fits a journal page
        panel_w = max(0.8, (max_width_in - left_in - right_in - (ncols - 1) * wspace_in) / ncols)
        width = left_in + ncols * panel_w + (ncols - 1) * wspace_in + right_in
    subtitle_lines = _wrap(subtitle, width)
    caption_lines = _wrap(caption, width)
    # + room for the panels' own titles
    top = _TOP_PAD_IN + (_TITLE_IN if title else 0.0) + _SUBTITLE_IN * len(subtitle_lines) + 0.3
    bottom = bottom_in + (_LINE_IN * len(caption_lines) + 0.15 if caption_lines else 0.0)
    height = top + nrows * panel_h + (nrows - 1) * hspace_in + bottom
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, sharex=sharex, sharey=sharey, squeeze=False)
    fig.subplots_adjust(
        left=left_in / width,
        right=1 - right_in / width,
        top=1 - top / height,
        bottom=bottom / height,
        wspace=wspace_in / panel_w,
        hspace=hspace_in / panel_h,
    )
    y = 1 - _TOP_PAD_IN / height
    if title:
        fig.text(left_in / width, y, title, ha="left", va="top", fontsize=11, fontweight="bold")
        y -= _TITLE_IN / height
    for line in subtitle_lines:
        color = FLAG_COLOR if line.startswith("SIMULATED") else "#444444"
        fig.text(left_in / width, y, line, ha="left", va="top", fontsize=8.5, color=color)
        y -= _SUBTITLE_IN / height
    for i, line in enumerate(caption_lines):
        fig.text(
            left_in / width,
            (0.1 + _LINE_IN * (len(caption_lines) - 1 - i)) / height,
            line,
            ha="left",
            va="bottom",
            fontsize=7.5,
            color="#333333",
        )
    return fig, axes


def fit_to_width(fig: Figure, max_width_in: float | None = None) -> float:
    """Narrow the panels (margins and text sizes kept) until the saved drawing, legends and
    labels included, is at most `max_width_in` (default MAX_WIDTH_IN) wide; returns the width it
    will have."""
    max_width_in = MAX_WIDTH_IN if max_width_in is None else max_width_in
    for _ in range(8):
        bbox = fig.get_tightbbox(fig.canvas.get_renderer())
        drawn = bbox.width + 2 * _SAVE_PAD_IN
        if drawn <= max_width_in + 1e-3:
            return drawn
        width, height = fig.get_size_inches()
        params = fig.subplotpars
        left_in, right_in = params.left * width, (1 - params.right) * width
        new_width = width - (drawn - max_width_in) - 0.02
        if new_width - left_in - right_in < 1.0:
            break
        texts = [(t, t.get_position()) for t in fig.texts]
        fig.set_size_inches(new_width, height)
        fig.subplots_adjust(left=left_in / new_width, right=1 - right_in / new_width)
        for text, (x, _y) in texts:  # figure texts keep their distance in inches from the left
            if text.get_transform() == fig.transFigure:
                text.set_x(x * width / new_width)
    return drawn


def _marker_artists(ax) -> list[tuple[str, Line2D | PathCollection]]:
    """(legend label, artist) of every labelled marker artist of `ax`, in drawing order."""
    # an errorbar's label is on its container, not on its data line
    container_labels = {
        id(c.lines[0]): c.get_label()
        for c in ax.containers
        if isinstance(c, ErrorbarContainer) and c.lines[0] is not None
    }
    found = []
    for artist in ax.get_children():
        if isinstance(artist, (Line2D, PathCollection)):
            label = container_labels.get(id(artist), artist.get_label())
            if label and not label.startswith("_"):
                found.append((label, artist))
    return sorted(found, key=lambda pair: pair[1].get_zorder())  # stable: drawing order kept


def _marker_points(artist) -> tuple[np.ndarray, float]:
    """Display positions (pixels) of an artist's markers and their size (points); none for a bare line."""
    if isinstance(artist, Line2D):
        if artist.get_marker() in (None, "None", "none", "", " ") or not artist.get_visible():
            return np.empty((0, 2)), 0.0
        xy = np.column_stack([artist.get_xdata(), artist.get_ydata()]).astype(float)
        size = float(artist.get_markersize())
    else:
        xy = np.asarray(artist.get_offsets(), dtype=float).reshape(-1, 2)
        sizes = artist.get_sizes()
        size = float(np.sqrt(np.max(sizes))) if len(sizes) else 0.0
        if not artist.get_visible():
            return np.empty((0, 2)), 0.0
    xy = xy[np.isfinite(xy).all(axis=1)]
    transform = artist.get_transform() if isinstance(artist, Line2D) else artist.get_offset_transform()
    return (transform.transform(xy) if len(xy) else xy), size


def tie_offsets(keys, step_pt: float = 5.0) -> list[float]:
    """Horizontal offsets (points) that set markers with equal keys side by side, centred on
    their spot; 0 for a marker alone. Keys are e.g. rounded (x, y) positions."""
    members: dict = {}
    for i, key in enumerate(keys):
        members.setdefault(key, []).append(i)
    offsets = [0.0] * len(keys)
    for group in members.values():
        for j, i in enumerate(group):
            offsets[i] = (j - (len(group) - 1) / 2) * step_pt
    return offsets


def shifted(ax, dx_pt: float) -> Transform:
    """ax's data transform moved `dx_pt` points to the right (for `transform=` of a marker)."""
    return ax.transData + ScaledTranslation(dx_pt / 72.0, 0.0, ax.figure.dpi_scale_trans)


def hidden_legend_entries(fig: Figure) -> list[str]:
    """Legend labels every one of whose markers lies under a marker of another label.

    A marker is hidden when one of another label, drawn later (higher zorder, or the same and
    added later) and at least as large, sits within a third of its size of the same spot.
    Such a legend entry names something the reader cannot see.
    """
    fig.canvas.draw()  # final limits and transforms
    tolerance = fig.dpi / 72.0
    hidden = []
    for ax in fig.axes:
        artists = _marker_artists(ax)
        points = [(label, *_marker_points(artist)) for label, artist in artists]
        for i, (label, xy, size) in enumerate(points):
            if not len(xy):
                continue
            covers = [
                other
                for other_label, other, other_size in points[i + 1 :]
                if other_label != label and len(other) and other_size >= size
            ]
            if not covers:
                continue
            above = np.vstack(covers)
            near = np.linalg.norm(xy[:, None, :] - above[None, :, :], axis=2) <= tolerance * max(size / 3, 1)
            if near.any(axis=1).all() and label not in hidden:
                hidden.append(label)
    return hidden


def figure_formats(formats) -> tuple[str, ...]:
    """The config's `figures.formats`, checked: png (the report shows it) and any of pdf, svg."""
    chosen = tuple(dict.fromkeys(str(f).lower() for f in formats))
    unknown = [f for f in chosen if f not in FORMAT_METADATA]
    if unknown or "png" not in chosen:
        raise ValueError(
            f"figures.formats: {list(formats)}; must hold png (the report shows it) and may add "
            f"{', '.join(f for f in FORMAT_METADATA if f != 'png')}"
        )
    return chosen


def save_figure(fig: Figure, path_stem) -> list[Path]:
    """Write `<path_stem>.<format>` for each of `FORMATS` (png and pdf unless `configure` set
    others) atomically and reproducibly; return the paths in that order.

    A suffix naming a format on `path_stem` is dropped (any other dot stays part of the name).
    """
    stem = Path(path_stem)
    if stem.suffix.lower().lstrip(".") in FORMAT_METADATA:
        stem = stem.with_suffix("")
    paths = []
    with styled():
        fit_to_width(fig)
        # The tight bbox (a long legend or label is never cut off), measured once on the drawing
        # hidden_legend_entries makes, at the PNG's dpi (text extents depend on it): savefig's
        # bbox_inches="tight" would draw the whole figure once more per format to measure it.
        screen_dpi = fig.dpi
        fig.set_dpi(DPI)
        try:
            for label in hidden_legend_entries(fig):
                log.warning("%s: every marker of legend entry %r is hidden under another", stem.name, label)
            bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(_SAVE_PAD_IN)
        finally:
            fig.set_dpi(screen_dpi)
        for extension in FORMATS:
            metadata = FORMAT_METADATA[extension]
            target = stem.with_name(f"{stem.name}.{extension}")
            with atomic_path(target) as tmp:
                fig.savefig(tmp, format=extension, dpi=DPI, metadata=metadata, bbox_inches=bbox)
            paths.append(target)
    return paths


def model_styles(names) -> dict[str, tuple[str, str]]:
    """name -> (color, marker), assigned in sorted name order so it does not depend on row order."""
    return {
        name: (
            MODEL_COLORS[i % len(MODEL_COLORS)],
            MODEL_MARKERS[(i // len(MODEL_COLORS)) % len(MODEL_MARKERS)],
        )
        for i, name in enumerate(sorted(set(names)))
    }


def ordered_modalities(values) -> list[str]:
    """The modalities present, in text/audio/video order, others after in sorted order."""
    present = set(values)
    return [m for m in MODALITIES if m in present] + sorted(present - set(MODALITIES))


def chance_line(ax, orientation: str = "h", value: float = 0.5) -> None:
    kwargs = {"color": "#999999", "linestyle": ":", "linewidth": 0.9, "zorder": 0}
    (ax.axhline if orientation == "h" else ax.axvline)(value, **kwargs)


def empty_panel(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="#666666")
    ax.set_xticks([])
    ax.set_yticks([])


def gathered_legend(axes, anchor, **kwargs):
    """One legend on `anchor` with every distinct label of `axes`, in first-seen order."""
    handles, labels = [], []
    for ax in np.ravel(axes):
        if not ax.get_visible():
            continue
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if not handles:
        return None
    options = {"loc": "upper left", "bbox_to_anchor": (1.04, 1.0), "borderaxespad": 0.0, **kwargs}
    return anchor.legend(handles, labels, **options)
