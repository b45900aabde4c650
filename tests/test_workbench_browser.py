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


def click_canvas(d, xy):
    """A real mouse click at pixel (x, y) of the timeline's box (Selenium offsets are from
    the element's centre)."""
    box = d.find_element(By.ID, "timeline")
    w, h = box.size["width"], box.size["height"]
    ActionChains(d).move_to_element_with_offset(
        box, int(xy[0] - w / 2), int(xy[1] - h / 2)
    ).click().perform()


def open_session(d, server, query=""):
    open_view(d, server, f"session/kolab/{SID}{query}")
    wait_for(d, lambda d: d.find_element(By.ID, "view").get_attribute("data-timeline") == "ready")


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
    d.find_element(By.CSS_SELECTOR, f'#sessions tbody tr[data-session="{SID}"]').click()
    wait_for(d, lambda d: d.find_element(By.ID, "view").get_attribute("data-timeline") == "ready")
    assert SID in d.find_element(By.TAG_NAME, "h1").text
    assert "R_A" in d.find_element(By.ID, "session-metrics").text


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


@pytest.mark.parametrize("corpus", ["kolab", "hasbench", "almanac"])
def test_a_session_of_every_corpus_opens_and_its_events_click(page, server, corpus):
    """Every corpus's sessions draw (agent traces have events and no edges, Almanac's
    actions are nodes), and a click on an event's tick shows that event."""
    d = page
    sid = httpx.get(
        f"{server.url}/workbench/sessions", params={"corpus": corpus, "limit": 1}
    ).json()["items"][0]["session_id"]
    tl = httpx.get(f"{server.url}/sessions/{corpus}/{sid}/timeline").json()
    open_view(d, server, f"session/{corpus}/{sid}")
    wait_for(d, lambda d: d.find_element(By.ID, "view").get_attribute("data-timeline") == "ready")
    lanes = js(
        d,
        "return echarts.getInstanceByDom(document.getElementById('timeline'))"
        ".getOption().yAxis[0].data",
    )
    assert lanes == [x["label"] for x in tl["lanes"]]
    ev = tl["events"]
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
