"""Exports (ui/export.py) and the download row (ui/downloads.py).

Figures go through kaleido and Debian's chromium: the PNG's IHDR chunk must give width x scale
by height x scale, the SVG must parse and carry the title and the trace's colour, the PDF must
start with %PDF. The heatmap's HTML, LaTeX and PNG come from hand-made records whose colours are
known (a score at +max is the palette's red, at -max its blue); hostile tokens must come out as
literal text. A LaTeX engine compiles the LaTeX where one is installed. Tables read back equal.
"""

from __future__ import annotations

import io
import re
import shutil
import struct
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from core.types import Attribution
from ui.downloads import downloads, file_stem
from ui.export import (
    Heatmap,
    chromium_path,
    figure_bytes,
    figure_images,
    heatmap_document,
    heatmap_latex,
    heatmap_png,
    latex_escape,
    table_bytes,
)
from ui.theme import NEGATIVE, POSITIVE

ROOT = Path(__file__).resolve().parents[1]


def has_browser() -> bool:
    try:
        chromium_path()
    except RuntimeError:
        return False
    return True


needs_browser = pytest.mark.skipif(not has_browser(), reason="no chromium")
HOSTILE = ("<script>alert(1)</script>", "\\", "%", "&", "_", "{", "}", "$", "#", "^", "~")
HOSTILE_LATEX = (
    r"\textless{}script\textgreater{}alert(1)\textless{}/script\textgreater{}",
    r"\textbackslash{}",
    r"\%",
    r"\&",
    r"\_",
    r"\{",
    r"\}",
    r"\$",
    r"\#",
    r"\textasciicircum{}",
    r"\textasciitilde{}",
)
HOSTILE_HTML = ("&lt;script&gt;alert(1)&lt;/script&gt;", "\\", "%", "&amp;", "_", "{", "}", "$", "#", "^", "~")


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (the first chunk, right after the signature)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert (length, kind) == (13, b"IHDR")
    return struct.unpack(">II", data[16:24])


def colours_in(data: bytes) -> set[tuple[int, int, int]]:
    return {c for _, c in Image.open(io.BytesIO(data)).convert("RGB").getcolors(maxcolors=1 << 20)}


def record(method: str, words: tuple[str, ...], scores: list[float]) -> Attribution:
    return Attribution(method, "x/0", 1, words, np.array(scores, dtype=np.float32))


@pytest.fixture
def heatmap() -> Heatmap:
    """Two methods over five words; loo_empty puts 'great' at +max and 'dull' at -max."""
    words = ("a", "great", "but", "dull", "film")
    return Heatmap(
        words,
        (0, 0, 0, 0, 0),
        {
            "loo_empty": record("loo_empty", words, [0.0, 2.0, 0.1, -2.0, 0.5]),
            "saliency": record("saliency", words, [0.1, 0.4, 0.0, 0.2, 0.3]),
        },
        rationale=(0, 1, 0, 1, 0),
        title="Example 0 & more",
    )


@pytest.fixture
def hostile() -> Heatmap:
    words = HOSTILE
    return Heatmap(words, (0,) * len(words), {"my_method": record("my_method", words, [0.0] * len(words))})


@pytest.fixture
def figure() -> go.Figure:
    return go.Figure(
        go.Bar(x=["loo", "ig"], y=[0.4, 0.7], marker={"color": f"rgb{POSITIVE}"}),
        layout={"title": {"text": "Comprehensiveness by method"}, "yaxis": {"title": {"text": "AOPC"}}},
    )


@needs_browser
def test_figure_png_svg_pdf_have_the_size_title_and_colours(figure: go.Figure) -> None:
    images = figure_images(figure, width=400, height=300, scale=2)
    assert png_size(images["png"]) == (800, 600)
    assert POSITIVE in colours_in(images["png"])
    svg = ET.fromstring(images["svg"])
    assert svg.get("width") == "400" and svg.get("height") == "300"
    texts = {t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")}
    assert {"Comprehensiveness by method", "AOPC", "loo", "ig"} <= texts
    assert "fill: rgb(178, 24, 43)" in images["svg"].decode()
    assert images["pdf"].startswith(b"%PDF-")
    assert images["pdf"].rstrip().endswith(b"%%EOF")


def test_figure_format_and_size_are_checked(figure: go.Figure) -> None:
    with pytest.raises(ValueError, match="figure format 'eps'"):
        figure_bytes(figure, "eps")
    with pytest.raises(ValueError, match="image width -1"):
        figure_bytes(figure, "png", width=-1)


def test_tables_read_back_equal() -> None:
    table = pd.DataFrame(
        {"method": ["loo_empty", '<b>ig</b>, "x"'], "aopc": [0.25, -1.5e-8], "n": [3, 40], "ok": [True, False]}
    )
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(table_bytes(table, "parquet"))), table)
    pd.testing.assert_frame_equal(pd.read_csv(io.BytesIO(table_bytes(table, "csv"))), table)
    with pytest.raises(ValueError, match="table format 'xlsx'"):
        table_bytes(table, "xlsx")


def test_heatmap_html_is_a_standalone_escaped_page(heatmap: Heatmap) -> None:
    page = heatmap_document(heatmap)
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>Example 0 &amp; more</title>" in page and "<h1>Example 0 &amp; more</h1>" in page
    assert "<style>" in page and 'class="hm-legend"' in page
    assert re.findall(r'data-method="([^"]+)"', page) == ["loo_empty", "saliency"]
    # self-contained: no script, link, image or stylesheet from anywhere
    assert not re.search(r"<script|<link|<img|src=|href=|url\(|@import", page)
    # 'great' at +max has the palette's red, 'dull' at -max its blue
    assert "background:#b2182b;color:#ffffff;outline" in page.split(">great</td>")[0][-200:]
    assert "background:#2166ac;color:#ffffff;outline" in page.split(">dull</td>")[0][-200:]
    assert "hover a word for its raw score" in page  # the HTML keeps each word's title
    assert "hover" not in heatmap_document(heatmap, hover_hint=False)  # what the PNG shows: no hovering


@needs_browser
def test_heatmap_png_is_the_page_in_its_colours(heatmap: Heatmap) -> None:
    png = heatmap_png(heatmap, width=700, scale=2)
    width, height = png_size(png)
    assert width == 1400 and 200 < height < 1000
    assert {POSITIVE, NEGATIVE} <= colours_in(png)


def latex_rows(latex: str) -> list[str]:
    body = latex.split(r"\begin{tabular}")[1].split(r"\end{tabular}")[0]
    return [line for line in body.splitlines() if line.endswith("\\\\") and not line.startswith(r"\multicolumn")]


def balanced(latex: str) -> bool:
    depth = 0
    for brace in re.sub(r"\\[{}\\]", "", latex):
        depth += {"{": 1, "}": -1}.get(brace, 0)
        if depth < 0:
            return False
    return depth == 0


def test_heatmap_latex_has_a_box_per_word_per_method(heatmap: Heatmap) -> None:
    latex = heatmap_latex(heatmap)
    assert balanced(latex)
    assert latex.startswith("\\documentclass{article}\n\\usepackage{xcolor}\n")
    rows = latex_rows(latex)
    assert [row.split(" & ")[0] for row in rows] == [
        r"\textbf{loo\_empty} {\scriptsize $\pm$2}",
        r"\textbf{saliency} {\scriptsize $\pm$0.4}",
    ]
    for row in rows:
        assert len(re.findall(r"\\f?colorbox\[RGB\]", row)) == 5
        assert len(re.findall(r"\\fcolorbox\[RGB\]\{27,27,27\}", row)) == 2  # 'great' and 'dull' framed
    assert r"\fcolorbox[RGB]{27,27,27}{178,24,43}{\strut\textcolor{white}{great}}" in rows[0]
    assert r"\fcolorbox[RGB]{27,27,27}{33,102,172}{\strut\textcolor{white}{dull}}" in rows[0]
    assert r"\colorbox[RGB]{247,247,247}{\strut a}" in rows[0]
    caption = latex.split(r"\caption")[1]
    assert caption.startswith("[Example 0 \\& more]{Example 0 \\& more.")
    assert "\\colorbox[RGB]{33,102,172}{\\textcolor{white}{$-$max}}" in caption
    assert "Framed words are the human rationale." in caption
    figure_only = heatmap_latex(heatmap, document=False)
    assert figure_only.startswith(r"\begin{figure}") and figure_only in latex


def test_heatmap_latex_of_a_pair_on_one_scale() -> None:
    words = ("a", "dog", "runs", "it", "moves")
    pair = Heatmap(
        words,
        (0, 0, 0, 1, 1),
        {"m": record("m", words, [0.0, 4.0, 1.0, -2.0, 0.0]), "n": record("n", words, [1.0, 0.0, 0.0, 0.0, 0.0])},
        shared_scale=True,
    )
    latex = heatmap_latex(pair)
    assert balanced(latex)
    body = latex.split(r"\begin{tabular}")[1]
    assert body.index(r"\textit{Premise}") < body.index(r"\textit{Hypothesis}")
    rows = latex_rows(latex)
    assert [len(re.findall(r"\\colorbox", row)) for row in rows] == [3, 3, 2, 2]
    # one scale (4): n's +1 is a quarter of the way to red, not red
    assert r"\colorbox[RGB]{230,191,196}{\strut a}" in rows[1]
    assert "$+$4" in latex.split(r"\caption")[1] and "All rows share one scale." in latex


def test_hostile_tokens_come_out_as_literal_text(hostile: Heatmap) -> None:
    assert [latex_escape(word) for word in HOSTILE] == list(HOSTILE_LATEX)
    latex = heatmap_latex(hostile)
    assert balanced(latex)
    row = latex_rows(latex)[0]
    assert row.startswith(r"\textbf{my\_method}")
    for escaped in HOSTILE_LATEX:
        assert rf"\colorbox[RGB]{{247,247,247}}{{\strut {escaped}}}" in row
    page = heatmap_document(hostile)
    assert "<script>" not in page
    for word, escaped in zip(HOSTILE, HOSTILE_HTML):
        assert f'title="{escaped}: +0">{escaped}</td>' in page, word


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex")
def test_heatmap_latex_compiles(heatmap: Heatmap, hostile: Heatmap, tmp_path: Path) -> None:
    for name, h in (("plain", heatmap), ("hostile", hostile)):
        (tmp_path / f"{name}.tex").write_text(heatmap_latex(h), encoding="utf-8")
        run = subprocess.run(
            ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"],
            cwd=tmp_path,
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stdout[-2000:]
        assert (tmp_path / f"{name}.pdf").read_bytes().startswith(b"%PDF")


NO_NETWORK_PROBE = """
import plotly.graph_objects as go
from ui.export import Heatmap, figure_images, heatmap_png
from core.types import Attribution
figure_images(go.Figure(go.Scatter(y=[1, 3, 2])), ("png",), width=200, height=100)
heatmap_png(Heatmap(("ok",), (0,), {"m": Attribution("m", "x", 0, ("ok",), [1.0])}), width=200)
"""


def is_local(address: str) -> bool:
    return address.startswith(("127.", "::1", "::ffff:127.", "[::1]", "[::ffff:127."))


def off_machine(trace: str) -> list[str]:
    """Lines of an ``strace -yy`` trace that send to, or open a TCP connection with, a non-local
    address. A ``connect`` on a UDP socket only picks a route (Chromium's reachability probe)."""
    found = []
    for line in trace.splitlines():
        call = re.search(r"(connect|sendto|sendmsg|sendmmsg)\(\d+<(TCP|UDP)(?:v6)?:\[(.*?)\]>", line)
        if call is None or (call[1] == "connect" and call[2] == "UDP"):
            continue
        if call[1] == "connect":
            address = re.search(r'inet_(?:addr|pton)\((?:AF_INET6, )?"([^"]+)"', line)
            peer = address[1] if address else ""
        else:
            peer = call[3].split("->")[1] if "->" in call[3] else ""
        if not is_local(peer):
            found.append(line[:200])
    return found


def test_trace_reader_flags_what_leaves_the_machine() -> None:
    """Lines from a trace of kaleido with Chromium's default flags, then local and probe lines."""
    dns = '9 sendto(23<UDP:[0.0.0.0:44567]>, "\\5start\\nduckduckgo\\3co"..., 38, 0, NULL, 0) = 38'
    dns_pair = "9 sendmmsg(112<UDP:[192.0.2.2:56567->10.255.255.53:53]>, [{msg_hdr={}}], 2, 0) = 2"
    tcp = '9 connect(7<TCP:[5]>, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("142.250.1.1")}, 16) = 0'
    probe = '9 connect(23<UDPv6:[3]>, {sa_family=AF_INET6, inet_pton(AF_INET6, "2001:4860:4860::8888", &a)}, 28) = 0'
    local = '9 sendto(5<TCP:[127.0.0.1:5->127.0.0.1:8501]>, "x", 1, 0, NULL, 0) = 1'
    assert off_machine(f"{dns}\n{dns_pair}\n{tcp}\n{probe}\n{local}") == [dns, dns_pair, tcp]


@needs_browser
@pytest.mark.skipif(shutil.which("strace") is None, reason="no strace")
def test_static_exports_send_nothing_off_the_machine(tmp_path: Path) -> None:
    """Every socket system call of the browser, traced: no packet to a non-local address.

    Chromium connects a UDP socket to a public address to learn its route (a ``connect`` on a
    datagram socket sends nothing), so only sends and TCP connections count.
    """
    trace = tmp_path / "trace.txt"
    run = subprocess.run(
        ["strace", "-f", "-qq", "-yy", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", str(trace)]
        + [sys.executable, "-c", NO_NETWORK_PROBE],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if run.returncode != 0 and "ptrace" in run.stderr:
        pytest.skip(f"strace cannot trace here: {run.stderr.strip()[:200]}")
    assert run.returncode == 0, run.stderr[-2000:]
    outside = off_machine(trace.read_text())
    assert outside == [], "\n".join(outside[:10])


def test_download_row_lists_each_kind(heatmap: Heatmap, figure: go.Figure, monkeypatch: pytest.MonkeyPatch) -> None:
    table = pd.DataFrame({"method": ["a"], "value": [1.5]})
    row = downloads("Example 0: sst2/dev", figure=figure, table=table, heatmap=heatmap, json={"scores": [1.0]})
    assert [(d.label, d.file_name, d.mime) for d in row] == [
        ("Figure PNG", "Example_0_sst2_dev.png", "image/png"),
        ("Figure SVG", "Example_0_sst2_dev.svg", "image/svg+xml"),
        ("Figure PDF", "Example_0_sst2_dev.pdf", "application/pdf"),
        ("CSV", "Example_0_sst2_dev.csv", "text/csv"),
        ("Parquet", "Example_0_sst2_dev.parquet", "application/vnd.apache.parquet"),
        ("Heatmap HTML", "Example_0_sst2_dev.html", "text/html"),
        ("Heatmap PNG", "Example_0_sst2_dev-heatmap.png", "image/png"),
        ("Heatmap LaTeX", "Example_0_sst2_dev.tex", "application/x-tex"),
        ("JSON", "Example_0_sst2_dev.json", "application/json"),
    ]
    made = {d.suffix: d.data() for d in row if d.suffix in {"table.csv", "heatmap.html", "heatmap.tex", "json"}}
    assert made["table.csv"] == b"method,value\na,1.5\n"
    assert made["heatmap.html"].decode() == heatmap_document(heatmap)
    assert made["heatmap.tex"].decode() == heatmap_latex(heatmap)
    assert made["json"] == b'{\n  "scores": [\n    1.0\n  ]\n}'
    assert [d.label for d in downloads("x", heatmap=heatmap)] == ["HTML", "PNG", "LaTeX"]
    monkeypatch.setenv("BROWSER_PATH", "/nowhere/chromium")
    errors = {d.label: d.error for d in downloads("x", figure=figure, table=table)}
    assert (
        errors["PNG"]
        == errors["PDF"]
        == "no Chromium at '/nowhere/chromium': install Debian's chromium (make browser) or set BROWSER_PATH"
    )
    assert errors["CSV"] is None
    with pytest.raises(ValueError, match="download name '::'"):
        file_stem("::")


SCRIPT = """
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from core.types import Attribution
from ui.downloads import download_row
from ui.export import Heatmap

words = ("<b>bold</b>", "fine")
record = Attribution("loo_empty", "x/0", 1, words, np.array([1.0, -0.5], dtype=np.float32))
download_row("demo.figure", name="curve", figure=go.Figure(go.Scatter(y=[1, 2])))
download_row("demo.table", name="scores", table=pd.DataFrame({"a": [1, 2]}))
download_row("demo.heatmap", name="example", heatmap=Heatmap(words, (0, 0), {"loo_empty": record}), json={"a": 1})
"""


def test_download_row_in_an_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "page.py"
    script.write_text(textwrap.dedent(SCRIPT))
    at = AppTest.from_file(str(script), default_timeout=60).run()
    assert not at.exception
    buttons = {b.key: b for b in at.download_button}
    assert list(buttons) == [
        "demo.figure.figure.png",
        "demo.figure.figure.svg",
        "demo.figure.figure.pdf",
        "demo.table.table.csv",
        "demo.table.table.parquet",
        "demo.heatmap.heatmap.html",
        "demo.heatmap.heatmap.png",
        "demo.heatmap.heatmap.tex",
        "demo.heatmap.json",
    ]
    assert [b.label for b in at.download_button] == [
        "PNG",
        "SVG",
        "PDF",
        "CSV",
        "Parquet",
        "HTML",
        "PNG",
        "LaTeX",
        "JSON",
    ]
    # every file is made on click (a deferred download), none while the page runs
    assert all(b.proto.deferred_file_id and not b.proto.url for b in at.download_button)
    for key in buttons:
        at.download_button(key=key).click()
        at.run()
        assert not at.exception, key
    monkeypatch.setenv("BROWSER_PATH", "/nowhere/chromium")
    at = AppTest.from_file(str(script), default_timeout=60).run()
    assert [b.disabled for b in at.download_button] == [True, True, True, False, False, False, True, False, False]
    assert at.download_button(key="demo.figure.figure.png").help.startswith("no Chromium at '/nowhere/chromium'")


def test_tables_keep_their_row_labels_in_the_files() -> None:
    """A table indexed by method exports the methods as its first column; a plain index is left out."""
    from ui.downloads import with_row_labels

    by_method = pd.DataFrame({"deletion AUC ↓": [0.25, 0.5]}, index=["loo_empty", "random"])
    csv = table_bytes(with_row_labels(by_method), "csv").decode("utf-8").splitlines()
    assert csv == ["row,deletion AUC ↓", "loo_empty,0.25", "random,0.5"]
    pairs = pd.DataFrame({"f1": [0.5]}, index=pd.MultiIndex.from_tuples([("im", "F1")], names=["method", "metric"]))
    assert list(with_row_labels(pairs).columns) == ["method", "metric", "f1"]
    plain = pd.DataFrame({"a": [1, 2]})
    assert with_row_labels(plain) is plain


@needs_browser
def test_the_probability_chart_axis_reaches_100_percent() -> None:
    from ui.charts import probability_chart

    svg = figure_bytes(probability_chart(["negative", "positive"], [0.002, 0.998], 1, 1), "svg", width=500).decode()
    ticks = re.findall(r'<g class="xtick"><text[^>]*>([^<]+)</text>', svg)
    assert ticks == ["0%", "25%", "50%", "75%", "100%"]
