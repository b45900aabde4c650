"""The workbench in a real browser: Debian's headless Chromium, driven by Selenium through
chromedriver, against `graphlake.server` on a loopback port over the demo lake (its recording
indexed for search). Every step is a user's: clicks land on the page (the timeline's canvas
included), the video really plays and seeks, search and SQL go through the service.

Needs the system packages ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them) and
the vision extra (the recording and its frame index); skips with the reason otherwise.
Screenshots land in ``test-artifacts/workbench/`` (or ``$GRAPHLAKE_ARTIFACTS``); with
``GRAPHLAKE_UPDATE_SCREENSHOTS=1`` the session view also replaces the README's picture.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from benchmarks.browser import chrome
from benchmarks.browser import missing as browser_missing
from conftest import LiveServer, require_installed

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("GRAPHLAKE_ARTIFACTS", ROOT / "test-artifacts")) / "workbench"
README_SHOT = ROOT / "docs" / "images" / "workbench-session.png"
SID = "kolab-7-000000"

if browser_missing():
    pytest.skip(browser_missing(), allow_module_level=True)
require_installed(
    "av", "lancedb", reason="the demo recording and frame search need the vision extra"
)

from selenium.common.exceptions import (  # noqa: E402
    NoSuchElementException,
    StaleElementReferenceException,
)
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.frames]


@pytest.fixture(scope="module")
def wb_lake(readme_demo) -> Path:
    """The lake `graphlake demo` leaves, its recording indexed: built once per run and
    shared with test_demo (tests/readme_demo.py); the tests only read it."""
    return readme_demo.lake


@pytest.fixture(scope="module")
def server(wb_lake):
    from graphlake.server import Settings

    with LiveServer(Settings(lake=wb_lake)) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    d = chrome()
    yield d
    d.quit()


@pytest.fixture
def page(browser, server, request):
    """The browser, with a screenshot and the console saved after each test, and no page
    error left unreported."""
    browser.get_log("browser")  # drop what earlier tests left
    yield browser
    name = request.node.name
    browser.save_screenshot(str(ARTIFACTS / f"{name}.png"))
    logs = browser.get_log("browser")
    (ARTIFACTS / f"{name}.console.txt").write_text(
        "\n".join(f"{e['level']} {e['message']}" for e in logs)
    )
    severe = [e["message"] for e in logs if e["level"] == "SEVERE"]
    assert not severe, f"the page logged errors: {severe}"


def open_view(d, server, hash_: str, timeout=60):
    d.get("about:blank")  # a new document: from the same page, a new hash would not reload
    d.get(f"{server.url}/#/{hash_}")
    wait_for(
        d,
        lambda d: d.find_element(By.ID, "view").get_attribute("data-state") in ("ready", "error"),
        timeout,
    )
    view = d.find_element(By.ID, "view")
    assert view.get_attribute("data-state") == "ready", view.text


def wait_for(d, cond, timeout=60):
    """Wait until ``cond(d)`` holds; elements that a re-render replaced mid-check are
    looked up again on the next poll."""
    return WebDriverWait(
        d,
        timeout,
        poll_frequency=0.1,
        ignored_exceptions=(NoSuchElementException, StaleElementReferenceException),
    ).until(cond)


def js(d, script, *args):
    return d.execute_script(script, *args)


#: The canvas's top-left and the point Selenium's pointer offsets start from: the W3C
#: in-view centre of the element, floored (the visible part's, after scrolling it into view).
CANVAS_ORIGIN = """
const r = arguments[0].getBoundingClientRect();
const left = Math.max(0, r.left), right = Math.min(window.innerWidth, r.right);
const top = Math.max(0, r.top), bottom = Math.min(window.innerHeight, r.bottom);
return [r.left, r.top, Math.floor((left + right) / 2), Math.floor((top + bottom) / 2)];
"""


def click_canvas(d, xy):
    """A real mouse click at pixel (x, y) of the timeline's canvas, where ECharts' own pixel
    coordinates start (inside the box's border: a tick is 3 px wide, so one pixel off the
    mark misses it)."""
    canvas = d.find_element(By.CSS_SELECTOR, "#timeline canvas")
    ActionChains(d).scroll_to_element(canvas).perform()
    x0, y0, cx, cy = js(d, CANVAS_ORIGIN, canvas)
    ActionChains(d).move_to_element_with_offset(
        canvas, round(x0 + xy[0]) - cx, round(y0 + xy[1]) - cy
    ).click().perform()


def open_session(d, server, query=""):
    open_view(d, server, f"session/kolab/{SID}{query}")
    wait_for(d, lambda d: d.find_element(By.ID, "view").get_attribute("data-timeline") == "ready")


#: Every text the timeline's canvas draws (lane and axis labels, step names, the cut-off
#: and context-window labels) as [text, x, y, w, h]. ECharts lays text out itself, so its
#: boxes come from its scene graph: the width as measured, the height the font's size (the
#: headless browser's glyph metrics are a few pixels tall whatever the font).
LABEL_BOXES = """
const chart = echarts.getInstanceByDom(document.getElementById('timeline'));
return chart.getZr().storage.getDisplayList(true)
  .filter((e) => e.type === 'tspan' && !e.invisible && !e.ignore && e.style.text)
  .map((e) => {
    const r = e.getBoundingRect().clone();
    const m = e.getComputedTransform();
    if (m) r.applyTransform(m);
    const px = Number((/([0-9.]+)px/.exec(e.style.font || '') || [0, 12])[1]);
    return [e.style.text, r.x, r.y + r.height / 2 - px / 2, r.width, px];
  });
"""


def overlapping_labels(d) -> list[tuple[str, str]]:
    boxes = js(d, LABEL_BOXES)
    assert boxes, "the timeline drew no text"
    return [
        (a[0], b[0])
        for k, a in enumerate(boxes)
        for b in boxes[k + 1 :]
        if min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]) > 1
        and min(a[2] + a[4], b[2] + b[4]) - max(a[2], b[2]) > 1
    ]


# ---------------------------------------------------------------------------------- browser


def test_sessions_browser_filters_sorts_and_opens_a_session(page, server):
    d = page
    open_view(d, server, "")
    wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#sessions tbody tr"))
    total = httpx.get(f"{server.url}/workbench/sessions").json()["total"]
    assert d.find_element(By.ID, "page-info").text.endswith(f"of {total}")

    d.find_element(By.CSS_SELECTOR, '.card[data-corpus="kolab"]').click()
    wait_for(
        d,
        lambda d: all(
            r.get_attribute("data-corpus") == "kolab"
            for r in d.find_elements(By.CSS_SELECTOR, "#sessions tbody tr")
        ),
    )
    d.find_element(By.CSS_SELECTOR, 'th[data-sort="burstiness"]').click()  # ascending
    d.find_element(By.CSS_SELECTOR, 'th[data-sort="burstiness"]').click()  # descending
    wait_for(
        d,
        lambda d: (
            "sorted-desc"
            in d.find_element(By.CSS_SELECTOR, 'th[data-sort="burstiness"]').get_attribute("class")
        ),
    )
    expect = httpx.get(
        f"{server.url}/workbench/sessions",
        params={"corpus": "kolab", "sort": "burstiness", "order": "desc", "limit": 25},
    ).json()
    wait_for(
        d,
        lambda d: (
            [
                r.get_attribute("data-session")
                for r in d.find_elements(By.CSS_SELECTOR, "#sessions tbody tr")
            ]
            == [r["session_id"] for r in expect["items"]]
        ),
    )

    q = d.find_element(By.ID, "filter-q")
    q.send_keys(SID)
    wait_for(
        d,
        lambda d: (  # the answer to the whole id, not to a prefix typed before it
            d.find_element(By.ID, "sessions").get_attribute("data-state") == "ready"
            and len(d.find_elements(By.CSS_SELECTOR, "#sessions tbody tr")) == 1
        ),
    )
    # the recorded session says so in the list
    row = d.find_element(By.CSS_SELECTOR, f'#sessions tbody tr[data-session="{SID}"]')
    assert row.find_elements(By.CSS_SELECTOR, ".rec")
    row.click()
    wait_for(d, lambda d: d.find_element(By.ID, "view").get_attribute("data-timeline") == "ready")
    assert SID in d.find_element(By.TAG_NAME, "h1").text
    assert "R_A" in d.find_element(By.ID, "session-metrics").text


def test_one_number_format_per_column_and_recordings_marked(page, server):
    """Shares read to three places in every row (a whole 1 as 1.000), ratings to two, counts
    as integers; only sessions with a recording carry the mark."""
    import re

    d = page
    open_view(d, server, "?corpus=kolab")
    wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#sessions tbody tr"))
    wait_for(d, lambda d: d.find_element(By.ID, "sessions").get_attribute("data-state") == "ready")
    keys = [th.get_attribute("data-sort") for th in d.find_elements(By.CSS_SELECTOR, "thead th")]
    rows = [
        [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        for tr in d.find_elements(By.CSS_SELECTOR, "#sessions tbody tr")
    ]
    shapes = {"retention_adopt": r"\d\.\d{3}", "burstiness": r"-?\d\.\d{3}",
              "collaboration_rating": r"\d\.\d{2}", "n_nodes": r"\d+"}  # fmt: skip
    for key, shape in shapes.items():
        column = [r[keys.index(key)] for r in rows if r[keys.index(key)]]
        assert column and all(re.fullmatch(shape, v) for v in column), (key, column)
    listed = httpx.get(
        f"{server.url}/workbench/sessions", params={"corpus": "kolab", "limit": 25}
    ).json()["items"]
    marked = {
        tr.get_attribute("data-session")
        for tr in d.find_elements(By.CSS_SELECTOR, "#sessions tbody tr")
        if tr.find_elements(By.CSS_SELECTOR, ".rec")
    }
    assert marked == {r["session_id"] for r in listed if r["has_recording"]} == {SID}


def test_click_a_node_shows_details_chain_chat_and_frames(page, server, wb_lake):
    d = page
    open_session(d, server)
    tl = httpx.get(f"{server.url}/sessions/kolab/{SID}/timeline").json()
    from graphlake.query.connection import Connection

    with Connection(wb_lake) as con:  # an adoption chain, as the lake's view has it
        chains = con.rows(
            "SELECT ai_nodes FROM adoption_chains WHERE corpus = 'kolab' AND "
            "session_id = $s AND NOT rooted_at_ai ORDER BY chain_root",
            {"s": SID},
        )
    ai = chains[0]["ai_nodes"][-1]
    triple = next(a for a in tl["adoptions"] if a["ai_node"] == ai)
    xy = js(d, "return workbench.timeline.pixelOf(arguments[0])", ai)
    click_canvas(d, xy)
    wait_for(d, lambda d: d.find_element(By.ID, "detail").get_attribute("data-node") == ai)
    assert d.find_element(By.ID, "detail-node").text == ai
    i = tl["occurrences"]["node_id"].index(ai)
    assert d.find_element(By.ID, "detail-title").text == tl["occurrences"]["label"][i]
    labels = [
        b.get_attribute("data-label")
        for b in d.find_elements(By.CSS_SELECTOR, "#detail-chain b[data-label]")
    ]
    assert triple["label"] in labels
    wait_for(
        d,
        lambda d: (
            d.find_elements(By.CSS_SELECTOR, "#detail-chat .chat-turn")
            or "no chat" in d.find_element(By.ID, "detail-chat").text
        ),
    )
    # thumbnails of the nearest frames, decoded by the browser
    wait_for(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#detail-frames img")) == 4)
    wait_for(
        d,
        lambda d: js(
            d,
            "return [...document.querySelectorAll('#detail-frames img')]"
            ".every(i => i.complete && i.naturalWidth > 0)",
        ),
        90,
    )
    # the chain is highlighted, as the lake's adoption_chains view defines it: every AI
    # output of the chain lit, no AI output of another chain
    mine = set(chains[0]["ai_nodes"])
    every_ai = {a["ai_node"] for a in tl["adoptions"]}
    lit = set(js(d, "return workbench.timeline.litNodes()"))
    assert lit & every_ai == mine
    assert js(d, "return workbench.timeline.cursorAt()") == pytest.approx(
        tl["occurrences"]["t_start"][i]
    )
    if os.environ.get("GRAPHLAKE_UPDATE_SCREENSHOTS"):
        README_SHOT.parent.mkdir(parents=True, exist_ok=True)
        d.save_screenshot(str(README_SHOT))


#: A session of each family the demo writes: the research corpora, then one agent trace of
#: each family ``ingest traces`` reads (graphlake/demo/traces.py), by its source folder.
FAMILIES = ["kolab", "hasbench", "almanac", "otel", "openinference", "inspect", "langfuse",
            "swe-agent", "openhands"]  # fmt: skip


def family_session(server, wb_lake, family: str) -> tuple[str, str]:
    if family in ("kolab", "hasbench", "almanac"):
        sid = httpx.get(
            f"{server.url}/workbench/sessions", params={"corpus": family, "limit": 1}
        ).json()["items"][0]["session_id"]
        return family, sid
    from graphlake.query import run_sql

    rows = run_sql(
        "SELECT session_id, source_file FROM sessions WHERE corpus = 'traces' ORDER BY 1",
        wb_lake,
    ).table.to_pylist()
    sid = next(r["session_id"] for r in rows if Path(r["source_file"]).parent.name == family)
    return "traces", sid


@pytest.mark.parametrize("family", FAMILIES)
def test_a_session_of_every_family_opens_and_its_events_click(page, server, wb_lake, family):
    """Every family's sessions draw with no console error (agent traces have events and no
    edges, Almanac's actions are nodes, traces nest spans), one lane per participant, a
    legend for what this session shows, labels that never overlap, and a click on an event's
    tick shows that event."""
    d = page
    corpus, sid = family_session(server, wb_lake, family)
    tl = httpx.get(f"{server.url}/sessions/{corpus}/{sid}/timeline").json()
    open_view(d, server, f"session/{corpus}/{quote(sid, safe='')}")  # inspect's ids hold "/"
    wait_for(d, lambda d: d.find_element(By.ID, "view").get_attribute("data-timeline") == "ready")
    lanes = js(
        d,
        "return echarts.getInstanceByDom(document.getElementById('timeline'))"
        ".getOption().yAxis[0].data",
    )
    assert lanes == [x["label"] for x in tl["lanes"]]
    assert len(set(lanes)) == len(lanes)
    assert overlapping_labels(d) == []
    # the legend names the event kinds drawn, in colours no adoption arrow uses; the hint
    # offers only the clicks this session has
    ev = tl["events"]
    shown = {
        s.get_attribute("data-kind"): s.find_element(By.TAG_NAME, "i").value_of_css_property(
            "background-color"
        )
        for s in d.find_elements(By.CSS_SELECTOR, "#legend-events span[data-kind]")
    }
    assert set(shown) == set(filter(None, ev["kind"]))
    adoption = {
        s.find_element(By.TAG_NAME, "i").value_of_css_property("background-color")
        for s in d.find_elements(By.CSS_SELECTOR, "#legend-adoptions span[data-kind]")
    }
    assert bool(adoption) == bool(tl["adoptions"]) and not adoption & set(shown.values())
    hint = d.find_element(By.ID, "timeline-hint").text
    assert ("click a bar" in hint) == bool(tl["occurrences"]["node_id"])
    assert ("click a tick" in hint) == bool(ev["t"])
    if any(e["kind"] == "parent" for e in tl["edges"]):  # a trace: its spans nest
        assert d.find_elements(By.CSS_SELECTOR, "#span-tree .span-row")
    if ev["t"]:
        # the tick with the most room around it in its lane: a click there hits only it
        def room(i):
            return min(
                (
                    abs(ev["t"][i] - ev["t"][j])
                    for j in range(len(ev["t"]))
                    if j != i and ev["lane"][j] == ev["lane"][i]
                ),
                default=1e9,
            )

        i = max(range(len(ev["t"])), key=room)
        click_canvas(d, js(d, "return workbench.timeline.pixelOfEvent(arguments[0])", i))
        wait_for(
            d,
            lambda d: (
                d.find_element(By.ID, "detail").get_attribute("data-event")
                == tl["events"]["event_id"][i]
            ),
        )
        assert d.find_element(By.ID, "detail-text").get_attribute("textContent") == (
            tl["events"]["text"][i] or ""
        )


def test_a_trace_nests_its_spans_and_opens_on_the_span_clicked(page, server, wb_lake):
    """The Langfuse trace nests generations under its agent under the trace: the tree
    starts folded below the top, and a click on a generation's bar in the timeline unfolds
    the path to it and marks its row; a click on a row opens that span's details."""
    d = page
    corpus, sid = family_session(server, wb_lake, "langfuse")
    tl = httpx.get(f"{server.url}/sessions/{corpus}/{sid}/timeline").json()
    parent = {e["dst"]: e["src"] for e in tl["edges"] if e["kind"] == "parent"}
    deep = next(n for n in parent if parent[n] in parent)  # a span with a grandparent
    open_view(d, server, f"session/{corpus}/{sid}")
    wait_for(d, lambda d: d.find_element(By.ID, "view").get_attribute("data-timeline") == "ready")
    row = f'#span-tree .span-row[data-node="{deep}"]'
    assert "hidden" in d.find_element(By.CSS_SELECTOR, row).get_attribute("class")
    click_canvas(d, js(d, "return workbench.timeline.pixelOf(arguments[0])", deep))
    wait_for(d, lambda d: d.find_element(By.ID, "detail").get_attribute("data-node") == deep)
    wait_for(d, lambda d: "selected" in d.find_element(By.CSS_SELECTOR, row).get_attribute("class"))
    assert d.find_element(By.CSS_SELECTOR, row).is_displayed()
    assert d.find_element(By.CSS_SELECTOR, f'#span-tree .span-row[data-node="{parent[deep]}"]')
    top = parent[parent[deep]]
    d.find_element(By.CSS_SELECTOR, f'#span-tree .span-row[data-node="{top}"]').click()
    wait_for(d, lambda d: d.find_element(By.ID, "detail").get_attribute("data-node") == top)


def test_adoption_chain_follows_responses_that_became_requests(page, server):
    """The page's chain rule (session.js) on triples built to tell it apart from "the triples
    touching the node": a -> b -> c, then c asked again: c -> d -> e; apart: x -> y -> z, and
    an AI output nobody asked for, p -> q."""
    d = page
    open_view(d, server, "sql")
    triples = [
        {"annotation_id": "t1", "source_node": "a", "ai_node": "b", "response_node": "c"},
        {"annotation_id": "t2", "source_node": "c", "ai_node": "d", "response_node": "e"},
        {"annotation_id": "t3", "source_node": "x", "ai_node": "y", "response_node": "z"},
        {"annotation_id": "t4", "source_node": None, "ai_node": "p", "response_node": "q"},
    ]
    chain = """const [triples, node, done] = arguments;
               import('/static/session.js').then((m) => {
                 const c = m.adoptionChain(triples, node);
                 done([[...c.nodes].sort(), c.triples.map((t) => t.annotation_id).sort()]);
               });"""
    for node, nodes, ids in [
        ("d", "abcde", ["t1", "t2"]),
        ("a", "abcde", ["t1", "t2"]),
        ("y", "xyz", ["t3"]),
        ("q", "pq", ["t4"]),
        ("n", "", []),
    ]:
        got = d.execute_async_script(chain, triples, node)
        assert got == [sorted(nodes), ids], node


def test_recording_plays_in_sync_and_a_click_seeks_it(page, server):
    d = page
    open_session(d, server)
    wait_for(d, lambda d: js(d, "return document.getElementById('recording').readyState") >= 1)
    assert js(d, "return document.getElementById('recording').videoWidth") > 0
    # a click on empty timeline space seeks the video there
    target = 1500.0
    xy = js(d, "return workbench.timeline.pixelAtTime(arguments[0])", target)
    click_canvas(d, xy)
    wait_for(
        d,
        lambda d: (
            abs(js(d, "return document.getElementById('recording').currentTime") - target) < 15
        ),
    )
    # play: time advances and the cursor follows it
    js(d, "document.getElementById('recording').play()")
    start = js(d, "return document.getElementById('recording').currentTime")
    wait_for(
        d,
        lambda d: js(d, "return document.getElementById('recording').currentTime") > start + 1.0,
        30,
    )
    js(d, "document.getElementById('recording').pause()")
    wait_for(
        d,
        lambda d: (
            abs(
                js(d, "return workbench.timeline.cursorAt()")
                - js(d, "return document.getElementById('recording').currentTime")
            )
            < 0.5
        ),
    )
    # the bytes came as ranges: the browser asked for parts of the file and got 206
    status = js(
        d,
        """return fetch(document.getElementById('recording').src,
                      {headers: {Range: 'bytes=0-99'}}).then(r => [r.status, r.headers.get(
                      'content-range')])""",
    )
    assert status[0] == 206 and status[1].startswith("bytes 0-99/")


def test_frame_search_jumps_to_its_moment(page, server):
    d = page
    open_view(d, server, "search")
    box = d.find_element(By.ID, "search-q")
    box.send_keys("summary of sources", Keys.ENTER)
    wait_for(
        d,
        lambda d: d.find_element(By.ID, "search-results").get_attribute("data-state") == "ready",
        120,
    )
    hits = d.find_elements(By.CSS_SELECTOR, "#search-results .hit")
    assert hits, d.find_element(By.ID, "search-results").text
    first = hits[0]
    t = float(first.get_attribute("data-t"))
    assert first.get_attribute("data-session") == SID
    wait_for(
        d,
        lambda d: js(
            d,
            "const i = document.querySelector('#search-results .hit img');"
            "return i.complete && i.naturalWidth > 0",
        ),
    )
    first.click()
    wait_for(d, lambda d: d.find_element(By.ID, "view").get_attribute("data-timeline") == "ready")
    wait_for(
        d, lambda d: abs(js(d, "return document.getElementById('recording').currentTime") - t) < 1.0
    )
    assert js(d, "return workbench.timeline.cursorAt()") == pytest.approx(t, abs=1.0)


def test_text_search_finds_nodes(page, server):
    d = page
    open_view(d, server, "search")
    Select(d.find_element(By.ID, "search-mode")).select_by_value("text")
    d.find_element(By.ID, "search-q").send_keys("refine requirements", Keys.ENTER)
    wait_for(
        d,
        lambda d: d.find_element(By.ID, "search-results").get_attribute("data-state") == "ready",
        120,
    )
    hits = d.find_elements(By.CSS_SELECTOR, "#search-results .hit")
    assert hits and "refine requirements" in hits[0].text.lower()


def test_sql_console_runs_a_query_and_charts_a_named_one(page, server):
    d = page
    open_view(d, server, "sql")
    sql = d.find_element(By.ID, "sql")
    sql.clear()
    sql.send_keys("SELECT corpus, count(*) AS n FROM sessions GROUP BY corpus ORDER BY corpus")
    sql.send_keys(Keys.CONTROL, Keys.ENTER)
    wait_for(
        d, lambda d: d.find_element(By.ID, "sql-results").get_attribute("data-state") == "ready"
    )
    cells = [
        [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        for tr in d.find_elements(By.CSS_SELECTOR, "#sql-results tbody tr")
    ]
    expect = httpx.post(
        f"{server.url}/sql",
        json={"sql": "SELECT corpus, count(*) AS n FROM sessions GROUP BY corpus ORDER BY corpus"},
    ).json()["rows"]
    assert cells == [[c, str(n)] for c, n in expect]
    # the guarded endpoint refuses a write, and the console says why
    sql.clear()
    sql.send_keys("DROP TABLE sessions")
    d.find_element(By.ID, "sql-run").click()
    wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#sql-results .error"))
    assert "only read statements" in d.find_element(By.CSS_SELECTOR, "#sql-results .error").text
    # Chromium logs the refused request (400) itself; that one, and only that, was expected
    severe = [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"]
    assert len(severe) == 1 and "/sql" in severe[0] and "400" in severe[0], severe
    # a named query with a chart: Vega-Lite draws it as SVG
    Select(d.find_element(By.ID, "named-query")).select_by_value("adoption_summary")
    d.find_element(By.ID, "sql-run").click()
    wait_for(d, lambda d: d.find_element(By.ID, "chart").get_attribute("data-rendered") == "true")
    marks = d.find_elements(By.CSS_SELECTOR, "#chart svg path, #chart svg rect")
    assert len(marks) > 10


def test_an_evaluator_instance_as_a_model_sees_it(page, server):
    d = page
    listed = httpx.get(
        f"{server.url}/benchmarks/kolab-1a/instances",
        params={"condition": "graph-chat", "limit": 1000},
    ).json()["items"]
    iid = next(i["id"] for i in listed if i["session_id"] == SID)  # the recorded session
    open_view(d, server, f"instance?protocol=kolab-1a&condition=graph-chat&id={iid}")
    wait_for(
        d, lambda d: d.find_element(By.ID, "instance-view").get_attribute("data-state") == "ready"
    )
    assert (
        Select(d.find_element(By.ID, "instance")).first_selected_option.get_attribute("value")
        == iid
    )
    inst = httpx.get(
        f"{server.url}/benchmarks/kolab-1a/instances/{iid}", params={"condition": "graph-chat"}
    ).json()
    shown = d.find_element(By.ID, "instance-prompt").get_attribute("textContent")
    assert shown == inst["prompt"]
    stray = """return [...document.getElementById('instance-view').childNodes]
               .filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent)"""
    assert js(d, stray) == [], "text outside the view's elements (a null printed?)"
    assert float(
        d.find_element(By.ID, "instance-view").get_attribute("data-cutoff")
    ) == pytest.approx(inst["inputs"]["cutoff"])
    drawn = js(
        d,
        """const s = echarts.getInstanceByDom(document.getElementById('timeline'))
                     .getOption().series.find(x => x.id === 'cutoff');
                     return s.markLine.data[0].xAxis""",
    )
    assert drawn == pytest.approx(inst["inputs"]["cutoff"])
    assert overlapping_labels(d) == []  # the cut-off's label clear of the time axis's
    # another condition: the same instance, another context
    Select(d.find_element(By.ID, "condition")).select_by_value("video")
    wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#instance-frames img"))
    wait_for(
        d,
        lambda d: js(
            d,
            "return [...document.querySelectorAll('#instance-frames img')]"
            ".every(i => i.complete && i.naturalWidth > 0)",
        ),
        90,
    )
    assert (
        Select(d.find_element(By.ID, "instance")).first_selected_option.get_attribute("value")
        == iid
    )
    video = httpx.get(
        f"{server.url}/benchmarks/kolab-1a/instances/{iid}", params={"condition": "video"}
    ).json()
    assert d.find_element(By.ID, "instance-prompt").get_attribute("textContent") == video["prompt"]


def test_the_default_instance_has_what_its_condition_promises(page, server, tmp_path):
    """Opened bare, the preview shows an instance of the first condition: on the demo lake
    the video condition lists the recorded session's instances, so frames show; on a lake
    with no recording it gives way to a condition without video, and says why."""
    from graphlake.demo.corpus import write_demo_corpus
    from graphlake.pipeline import ingest_path
    from graphlake.server import Settings

    d = page
    ready = lambda d: d.find_element(By.ID, "instance-view").get_attribute("data-state") == "ready"  # noqa: E731
    open_view(d, server, "instance")
    wait_for(d, ready)
    condition = Select(d.find_element(By.ID, "condition")).first_selected_option.text
    first = httpx.get(f"{server.url}/benchmarks").json()["items"][0]
    assert condition == first["conditions"][0] and condition in first["video_conditions"]
    wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#instance-frames img"))
    assert (
        "only the instances whose session has a recording"
        in d.find_element(By.ID, "condition-note").text
    )

    ingest_path("kolab", write_demo_corpus(tmp_path, sessions=3, recording=False), tmp_path / "l")
    with LiveServer(Settings(lake=tmp_path / "l")) as bare:
        open_view(d, bare, "instance")
        wait_for(d, ready)
        chosen = Select(d.find_element(By.ID, "condition")).first_selected_option.text
        assert chosen not in first["video_conditions"]
        note = d.find_element(By.ID, "condition-note").text
        assert f"so {condition} (which lists only instances whose session has one)" in note
        assert d.find_element(By.ID, "instance-prompt").text  # an instance, not "no instances"


def test_saved_eval_runs_side_by_side_and_a_wrong_answer_opens_what_the_model_saw(page, tmp_path):
    """Two runs kept in the lake (a model in the graph condition, the majority baseline in
    chat): the runs view lays them side by side with their metrics and class by class, each
    with its chart; a click on a run lists its predictions wrong first, and a wrong answer's
    link opens the instance in the run's condition."""
    from graphlake.demo.corpus import write_demo_corpus
    from graphlake.pipeline import ingest_path
    from graphlake.protocols import Benchmarks
    from graphlake.query.connection import Connection
    from graphlake.server import Settings

    lake = tmp_path / "lake"
    ingest_path("kolab", write_demo_corpus(tmp_path, sessions=3, recording=False), lake)
    bench = Benchmarks(Connection(lake))
    gold = {i: r["gold"] for i, r in bench.gold("kolab-1b").items()}
    ids = sorted(gold)
    # right on every instance but two, and one answer no label can be read from
    flip = {"ADOPT": "REJECT", "MODIFY": "ADOPT", "REJECT": "ADOPT"}
    answers = [flip[gold[i]] if k < 2 else gold[i] for k, i in enumerate(ids)]
    answers[2] = "I cannot tell"
    preds = [{"id": i, "label": a} for i, a in zip(ids, answers, strict=True)]
    bench.save("kolab-1b", preds, model="model-a", condition="graph")
    bench.save("kolab-1b", bench.baseline("kolab-1b", "majority"), model="majority",
               condition="chat")  # fmt: skip
    d = page
    with LiveServer(Settings(lake=lake)) as srv:
        listed = httpx.post(f"{srv.url}/queries/eval_runs", json={"params": {}}).json()
        runs = [dict(zip(listed["columns"], r, strict=True)) for r in listed["rows"]]
        open_view(d, srv, "runs")
        rows = d.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
        assert [r.get_attribute("data-run") for r in rows] == [r["run_id"] for r in runs]
        wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#runs-chart svg"))
        wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#classes-chart svg"))
        per_class = httpx.post(f"{srv.url}/queries/eval_run_classes", json={"params": {}})
        classes = d.find_elements(By.CSS_SELECTOR, "#run-classes tbody tr")
        assert len(classes) == len(per_class.json()["rows"]) == 2 * 3  # ADOPT, MODIFY, REJECT
        model_a = next(r for r in runs if r["model"] == "model-a")
        d.find_element(By.CSS_SELECTOR, f'#runs tr[data-run="{model_a["run_id"]}"]').click()
        wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#predictions-table tbody tr"))
        outcomes = [
            tr.get_attribute("data-outcome")
            for tr in d.find_elements(By.CSS_SELECTOR, "#predictions-table tbody tr")
        ]
        assert outcomes == ["wrong", "wrong", "invalid"] + ["right"] * (len(ids) - 3)
        assert "run=" in d.current_url  # the address holds the run: a reload comes back to it
        link = d.find_element(By.CSS_SELECTOR, "#predictions-table tbody tr a")
        wrong_id = link.text
        assert wrong_id in ids[:2]
        link.click()
        view = (By.ID, "instance-view")
        wait_for(d, lambda d: d.find_element(*view).get_attribute("data-state") == "ready")
        assert Select(d.find_element(By.ID, "instance")).first_selected_option.text == wrong_id
        assert Select(d.find_element(By.ID, "condition")).first_selected_option.text == "graph"
        assert wrong_id in d.find_element(By.CSS_SELECTOR, "#instance-view h2").text
        # the preview says what the run answered, and that it was wrong
        said = wait_for(d, lambda d: d.find_element(By.ID, "instance-answer").text)
        assert f"gold {gold[wrong_id]}: wrong" in said and "model-a" in said
        flipped = answers[ids.index(wrong_id)]
        assert f"read as {flipped}" in said
        # a kept run in the sessions list opens here too
        open_view(d, srv, "?corpus=evals")
        wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#sessions tbody tr"))
        d.find_element(
            By.CSS_SELECTOR, f'#sessions tbody tr[data-session="{model_a["run_id"]}"]'
        ).click()
        wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#predictions-table tbody tr"))
        selected = d.find_element(By.CSS_SELECTOR, "#runs tbody tr.selected")
        assert selected.get_attribute("data-run") == model_a["run_id"]


# -- races: answers that arrive late, held back by a Gate in front of the real server --------
@pytest.fixture(scope="module")
def gated(wb_lake):
    from conftest import Gate
    from graphlake.server import Settings

    gates = []
    with LiveServer(
        Settings(lake=wb_lake), wrap=lambda app: gates.append(Gate(app)) or gates[0]
    ) as srv:
        yield srv, gates[0]
        gates[0].release()


def _settle(d):
    """Let the page handle whatever the server has sent: a fetch answered after it, then a
    task (responses are handled in the order they arrive)."""
    d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/health').then(() => setTimeout(done, 0), () => setTimeout(done, 0));"
    )


def test_leaving_a_session_before_its_timeline_arrives_draws_nothing_into_the_next_view(
    page, gated
):
    d, (server, gate) = page, gated
    open_view(d, server, "")
    gate.hold(r"/sessions/kolab/[^/?]+/timeline")
    js(d, f"location.hash = '#/session/kolab/{SID}'")
    assert gate.arrived.wait(120)
    js(d, "location.hash = '#/search'")
    wait_for(d, lambda d: d.find_element(By.ID, "view").get_attribute("data-state") == "ready")
    gate.release()
    assert gate.done.wait(120)
    _settle(d)
    headings = [h.text for h in d.find_elements(By.CSS_SELECTOR, "#view h1")]
    assert len(headings) == 1, headings  # the search view's alone
    assert not d.find_elements(By.ID, "timeline")
    assert js(d, "return document.querySelectorAll('[_echarts_instance_]').length") == 0


def test_next_twice_fast_then_previous_lands_on_the_first_page(page, gated):
    d, (server, gate) = page, gated
    total = httpx.get(f"{server.url}/workbench/sessions", params={"limit": 1}).json()["total"]
    assert total > 50, "the demo lake needs three pages of sessions"
    open_view(d, server, "")
    wait_for(d, lambda d: d.find_element(By.ID, "page-info").text.startswith("1-25 of"))
    gate.hold(r"/workbench/sessions\?.*cursor=")
    d.find_element(By.ID, "next-page").click()
    assert gate.arrived.wait(120)
    d.find_element(By.ID, "next-page").click()  # while page 2 loads
    gate.release()
    assert gate.done.wait(120)
    _settle(d)
    wait_for(d, lambda d: d.find_element(By.ID, "page-info").text == f"26-50 of {total}")
    d.find_element(By.ID, "prev-page").click()
    wait_for(d, lambda d: d.find_element(By.ID, "page-info").text == f"1-25 of {total}")


def test_the_address_instance_id_holds_only_for_its_own_protocol(page, server):
    d = page
    listed = httpx.get(
        f"{server.url}/benchmarks/kolab-1a/instances", params={"condition": "graph", "limit": 1}
    ).json()["items"]
    iid = listed[0]["id"]
    open_view(d, server, f"instance?protocol=kolab-1a&condition=graph&id={iid}")
    ready = lambda d: d.find_element(By.ID, "instance-view").get_attribute("data-state") == "ready"  # noqa: E731
    wait_for(d, ready)
    Select(d.find_element(By.ID, "protocol")).select_by_value("kolab-1b")
    ids_1b = [
        i["id"]
        for i in httpx.get(
            f"{server.url}/benchmarks/kolab-1b/instances",
            params={"condition": "video", "limit": 50},
        ).json()["items"]
    ]
    wait_for(
        d,
        lambda d: (
            Select(d.find_element(By.ID, "instance")).first_selected_option.get_attribute("value")
            in ids_1b
        ),
    )
    wait_for(d, ready)
    assert not d.find_elements(By.CSS_SELECTOR, "#instance-view .error"), d.find_element(
        By.ID, "instance-view"
    ).text
    assert iid not in [
        o.get_attribute("value") for o in Select(d.find_element(By.ID, "instance")).options
    ]
