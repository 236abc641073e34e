"""The conversation page at ``/`` in a real browser against a live server and the scripted
model: one flow per bullet of the page's part of issue 12."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, Route, expect

from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread
from tests.web.proxy import CuttableProxy

pytestmark = pytest.mark.bwrap

OUT = "/mnt/user-data/outputs"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEUlEQVR4nGP4z8AARAxg8j8AG/ID/fPnS7EAAAAASUVORK5CYII="


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "args": args}]}


def open_page(page: Page, server: LiveServer, hash_: str = "") -> None:
    page.goto(f"{server.url}/{hash_}")
    page.wait_for_selector("html[data-ready=true]", state="attached")


def send(page: Page, text: str) -> None:
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def status(page: Page) -> Any:
    return page.locator("#run-status")


def wait_status(page: Page, value: str) -> None:
    expect(status(page)).to_have_attribute("data-status", value)


def run_to_end(server: LiveServer, text: str, **body: Any) -> str:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        tid = http.post("/threads", json={}).json()["thread_id"]
        http.post(
            f"/threads/{tid}/runs/wait",
            json={
                "assistant_id": "lead_agent",
                "input": {"messages": [{"role": "user", "content": text}]},
                **body,
            },
        ).raise_for_status()
    return str(tid)


def test_thread_list_search_new_chat_and_delete(
    page: Page, web_server: LiveServer, stub: StubServerThread, key: str
) -> None:
    stub.add_script(f"{key}-a", ["first answer"], title=f"{key} Alpha Notes")
    stub.add_script(f"{key}-b", ["second answer"], title=f"{key} Beta Plans")
    stub.add_script(
        f"{key}-q",
        [
            call(
                "ask_clarification",
                question="Which?",
                clarification_type="approach_choice",
                options=["x"],
            )
        ],
    )
    alpha = run_to_end(web_server, f"{key}-a")
    run_to_end(web_server, f"{key}-b")
    run_to_end(web_server, f"{key}-q")
    open_page(page, web_server)

    items = page.locator("#thread-list a")
    page.fill("#thread-search", key)
    expect(items).to_have_count(3)
    # newest first, with titles (the untitled one shows what the user typed) and status
    expect(items.locator(".t-title")).to_have_text(
        [f"{key}-q", f"{key} Beta Plans", f"{key} Alpha Notes"]
    )
    expect(items.nth(0).locator(".badge")).to_have_text("waiting")
    page.fill("#thread-search", "alpha")
    expect(items).to_have_count(1)
    items.first.click()
    expect(page.locator("#thread-title")).to_have_text(f"{key} Alpha Notes")
    expect(page.locator(".msg.ai .body")).to_have_text("first answer")
    assert page.url.endswith(f"#/t/{alpha}")

    page.once("dialog", lambda d: d.accept())
    page.click("#delete-thread")
    expect(page.locator("#thread-title")).to_have_text("New chat")
    page.fill("#thread-search", key)
    expect(items).to_have_count(2)
    assert httpx.get(f"{web_server.url}/threads/{alpha}").status_code == 404

    items.first.click()
    expect(page.locator("#clarification")).to_be_visible()
    page.click("#new-chat")
    expect(page.locator("#thread-title")).to_have_text("New chat")
    expect(page.locator("#messages .msg")).to_have_count(0)
    expect(page.locator("#clarification")).to_be_hidden()


def test_streaming_tokens_tool_calls_todos_and_escaped_model_text(
    page: Page, web_server: LiveServer, stub: StubServerThread, key: str
) -> None:
    todos = [
        {"content": "Read", "status": "completed"},
        {"content": "Write", "status": "in_progress"},
    ]
    answer = "Here **is** <b>not bold</b> <img src=x onerror=alert(1)> " + " ".join(
        f"w{i}" for i in range(12)
    )
    stub.add_script(
        key,
        [
            call("write_todos", todos=todos),
            call("write_file", description="save", path=f"{OUT}/n.txt", content="hello"),
            call("present_files", filepaths=[f"{OUT}/n.txt"]),
            {"content": answer, "chunk_delay": 0.12},
        ],
    )
    open_page(page, web_server)
    page.check("#plan-mode")
    send(page, key)

    streaming = page.locator(".msg.ai.streaming .body")
    expect(streaming).to_contain_text("w2")
    partial = streaming.inner_text()
    final_body = page.locator(".msg.ai .body").last
    expect(final_body).to_have_text(re.compile(r"w11$"))
    wait_status(page, "idle")
    final = final_body.inner_text()
    assert partial and final.startswith(partial.rstrip()) and len(partial) < len(final)
    assert "<b>not bold</b> <img src=x onerror=alert(1)>" in final
    assert page.locator(".msg.ai .body b, .msg.ai .body img").count() == 0
    assert page.locator(".msg.ai .body strong").inner_text() == "is"

    expect(page.locator("#todo-list li")).to_have_count(2)
    assert page.eval_on_selector_all("#todo-list li", "els => els.map(e => e.dataset.status)") == [
        "completed",
        "in_progress",
    ]
    tool = page.locator("details.tool[data-tool=write_file]")
    expect(tool.locator(".tool-status")).to_have_text(" done")
    assert tool.get_attribute("open") is None
    tool.locator("summary").click()
    expect(tool).to_have_attribute("open", "")
    expect(tool).to_contain_text('"path": "/mnt/user-data/outputs/n.txt"')
    expect(tool).to_contain_text("Wrote 5 characters to /mnt/user-data/outputs/n.txt")
    assert not [m for m in page.console_messages if m.startswith(("error", "pageerror"))]  # type: ignore[attr-defined]


def test_upload_by_drag_and_drop_then_artifacts_preview_and_download(
    page: Page, web_server: LiveServer, stub: StubServerThread, key: str, tmp_path: Path
) -> None:
    md = "# Report\n\n<script>window.pwned = 1</script> *safe*\n"
    stub.add_script(
        key,
        [
            call("read_file", description="r", path="/mnt/user-data/uploads/data.csv"),
            call("write_file", description="md", path=f"{OUT}/report.md", content=md),
            call(
                "write_file",
                description="html",
                path=f"{OUT}/page.html",
                content="<script>x</script>",
            ),
            call("bash", description="png", command=f"echo {PNG} | base64 -d > {OUT}/dot.png"),
            call(
                "present_files",
                filepaths=[f"{OUT}/report.md", f"{OUT}/page.html", f"{OUT}/dot.png"],
            ),
            {"content": "files ready"},
        ],
    )
    open_page(page, web_server)
    drop = page.evaluate_handle(
        """() => { const dt = new DataTransfer();
                   dt.items.add(new File(['a,b\\n1,2\\n'], 'data.csv', {type: 'text/csv'}));
                   return dt; }"""
    )
    page.dispatch_event("#composer", "dragenter", {"dataTransfer": drop})
    expect(page.locator("#drop-hint")).to_be_visible()
    page.dispatch_event("#composer", "drop", {"dataTransfer": drop})
    expect(page.locator("#attachments li")).to_have_text(["data.csv ✓"])
    send(page, f"{key} use the file")
    expect(page.locator(".msg.human .files")).to_have_text("Attached: data.csv")
    expect(page.locator(".msg.ai .body").last).to_have_text("files ready")
    read = page.locator("details.tool[data-tool=read_file]")
    read.locator("summary").click()
    expect(read).to_contain_text("a,b\n1,2")

    rows = page.locator("#artifact-list li")
    expect(rows).to_have_count(3)
    assert rows.locator(".name").all_inner_texts() == ["report.md", "page.html", "dot.png"]
    assert rows.nth(1).locator("button").count() == 0  # HTML is never rendered, only downloaded

    rows.nth(0).get_by_role("button", name="Preview report.md").click()
    body = page.locator("#preview-body")
    expect(body.locator("h3")).to_have_text("Report")
    expect(body).to_contain_text("<script>window.pwned = 1</script>")
    assert body.locator("script").count() == 0
    assert page.evaluate("window.pwned") is None
    page.click("#preview-close")

    rows.nth(2).get_by_role("button", name="Preview dot.png").click()
    image = body.locator("img")
    expect(image).to_have_attribute("alt", "dot.png")
    page.wait_for_function("() => document.querySelector('#preview-body img')?.naturalWidth === 2")
    page.click("#preview-close")

    with page.expect_download() as download:
        rows.nth(1).get_by_role("link", name="Download page.html").click()
    saved = tmp_path / "page.html"
    download.value.save_as(saved)
    assert saved.read_text() == "<script>x</script>"
    assert download.value.suggested_filename == "page.html"


def test_clarification_is_answered_in_place_and_the_run_resumes(
    page: Page, web_server: LiveServer, stub: StubServerThread, key: str
) -> None:
    ask = call(
        "ask_clarification",
        question="Which format?",
        clarification_type="approach_choice",
        context="Both work.",
        options=["csv", "json"],
    )
    stub.add_script(key, [ask, {"content": "using the answer"}])
    open_page(page, web_server)
    send(page, key)

    box = page.locator("#clarification")
    expect(box).to_be_visible()
    expect(page.locator("#clarification-question")).to_have_text("Which format?")
    expect(page.locator("#clarification-context")).to_have_text("Both work.")
    expect(page.locator("#clarification-options button")).to_have_text(["csv", "json"])
    expect(status(page)).to_have_text("Waiting for your answer")
    page.get_by_role("button", name="json").click()

    expect(page.locator(".msg.ai .body").last).to_have_text("using the answer")
    wait_status(page, "idle")
    expect(box).to_be_hidden()
    tool = page.locator("details.tool[data-tool=ask_clarification]")
    expect(tool.locator(".tool-status")).to_have_text(" done")
    tool.locator("summary").click()
    # the question is the call's result; the answer follows as the user's message
    expect(tool.locator("pre").last).to_have_text(
        "🔀 Both work.\n\nWhich format?\n\n  1. csv\n  2. json"
    )
    expect(page.locator(".msg.human").last).to_have_text("json")


def test_model_picker_plan_and_thinking_toggles_reach_the_run(
    page: Page, web_server: LiveServer, stub: StubServerThread, key: str
) -> None:
    stub.add_script(key, ["configured"])
    open_page(page, web_server)
    options = page.locator("#model-select option")
    expect(options).to_have_text(["Stub model", "stub-vision"])
    expect(page.locator("#thinking")).to_be_disabled()  # the first model has no thinking mode
    page.select_option("#model-select", "stub-vision")
    expect(page.locator("#thinking")).to_be_enabled()
    page.check("#thinking")
    page.check("#plan-mode")
    with page.expect_request(re.compile(r"/runs/stream$")) as sent:
        send(page, key)
    body = json.loads(sent.value.post_data or "{}")
    assert body["config"] == {
        "configurable": {
            "is_plan_mode": True,
            "thinking_enabled": True,
            "model_name": "stub-vision",
        }
    }
    assert body["stream_resumable"] is True
    expect(page.locator(".msg.ai .body").last).to_have_text("configured")
    assert stub.requests_for(key)[0]["model"] == "stub-vision"
    # the choice is remembered
    page.reload()
    page.wait_for_selector("html[data-ready=true]", state="attached")
    expect(page.locator("#model-select")).to_have_value("stub-vision")
    expect(page.locator("#plan-mode")).to_be_checked()


def test_reload_mid_answer_rejoins_from_the_cursor_without_losing_text(
    page: Page, web_server: LiveServer, stub: StubServerThread, key: str
) -> None:
    words = [f"t{i}" for i in range(40)]
    stub.add_script(key, [{"content": " ".join(words), "chunk_delay": 0.12}])
    open_page(page, web_server)
    send(page, key)
    expect(page.locator(".msg.ai.streaming .body")).to_contain_text("t5")
    joins: list[dict[str, str]] = []
    page.on(
        "request",
        lambda r: joins.append(r.headers) if re.search(r"/runs/[^/]+/stream\?", r.url) else None,
    )
    page.reload()
    page.wait_for_selector("html[data-ready=true]", state="attached")
    # what was shown before the reload is back at once, then the rest streams in
    expect(page.locator(".msg.ai .body").last).to_contain_text("t0 t1 t2 t3 t4 t5")
    expect(page.locator(".msg.ai .body").last).to_have_text(" ".join(words))
    wait_status(page, "idle")
    assert page.locator(".msg.ai").count() == 1
    assert page.locator(".msg.human").all_inner_texts() == [key]
    assert joins and int(joins[0]["last-event-id"]) > 0
    assert page.evaluate("Object.keys(sessionStorage).filter(k => k.startsWith('fawn:run:'))") == []


def test_a_run_in_progress_elsewhere_shows_running_survives_a_network_drop_and_ends(
    page: Page, web_server: LiveServer, stub: StubServerThread, key: str
) -> None:
    words = [f"n{i}" for i in range(30)]
    stub.add_script(key, [{"content": " ".join(words), "chunk_delay": 0.12}])
    with httpx.Client(base_url=web_server.url, timeout=60) as http:
        tid = http.post("/threads", json={}).json()["thread_id"]
        http.post(
            f"/threads/{tid}/runs",
            json={
                "assistant_id": "lead_agent",
                "input": {"messages": [{"role": "user", "content": key}]},
                # as another client that streams would start it (the model then streams)
                "stream_mode": ["values", "messages-tuple"],
                "stream_resumable": True,
            },
        ).raise_for_status()
        proxy = CuttableProxy(web_server.port)
        try:
            _follow_through_a_drop(page, proxy, tid, words)
        finally:
            proxy.close()
        assert http.get(f"/threads/{tid}").json()["status"] == "idle"


def _follow_through_a_drop(page: Page, proxy: CuttableProxy, tid: str, words: list[str]) -> None:
    page.goto(f"{proxy.url}/#/t/{tid}")
    page.wait_for_selector("html[data-ready=true]", state="attached")
    # the newest checkpoint may say next=["model"]: the page trusts the active run
    expect(status(page)).to_have_text("Running…")
    expect(page.locator(".msg.ai.streaming .body")).to_contain_text("n3")
    joins: list[dict[str, str]] = []
    page.on(
        "request",
        lambda r: joins.append(r.headers) if re.search(r"/runs/[^/]+/stream\?", r.url) else None,
    )
    proxy.cut()  # the connection drops mid-answer
    expect(page.locator(".msg.ai .body").last).to_have_text(" ".join(words))
    wait_status(page, "idle")
    assert page.locator(".msg.ai").count() == 1
    assert joins and int(joins[0]["last-event-id"]) > 0


def test_a_401_asks_to_sign_in_and_posts_deerflows_login(
    page: Page, web_server: LiveServer
) -> None:
    """Auth is not on this branch: the 401s and the login route are played by the browser's
    router, so this checks the page's half of the exchange only."""
    signed_in = {"yes": False}
    logins: list[dict[str, Any]] = []

    def gate(route: Route) -> None:
        if signed_in["yes"]:
            route.continue_()
        else:
            route.fulfill(status=401, json={"detail": "authentication required"})

    def login(route: Route) -> None:
        logins.append({"body": route.request.post_data, "headers": route.request.headers})
        signed_in["yes"] = True
        route.fulfill(
            status=200, json={"ok": True}, headers={"Set-Cookie": "csrf_token=tok-1; Path=/"}
        )

    page.route(re.compile(r"/(threads|api/models)"), gate)
    page.route("**/api/v1/auth/login/local", login)
    open_page(page, web_server)
    dialog = page.locator("#signin")
    expect(dialog).to_be_visible()
    page.get_by_label("Email or user name").fill("ada@example.com")
    page.get_by_label("Password").fill("s3cret!")
    page.get_by_role("button", name="Sign in").click()
    expect(dialog).to_be_hidden()
    assert logins[0]["body"] == "username=ada%40example.com&password=s3cret%21"
    assert logins[0]["headers"]["content-type"] == "application/x-www-form-urlencoded"
    expect(page.locator("#model-select option")).to_have_count(2)
    with page.expect_request(
        lambda r: r.method == "POST" and r.url.endswith("/threads")
    ) as created:
        send(page, "hello")
    assert created.value.headers["x-csrf-token"] == "tok-1"


def test_security_headers_labels_keyboard_and_phone_width(
    page: Page, web_server: LiveServer, stub: StubServerThread, key: str
) -> None:
    response = httpx.get(f"{web_server.url}/")
    csp = response.headers["content-security-policy"]
    assert (
        "script-src 'self'" in csp
        and "default-src 'none'" in csp
        and "frame-ancestors 'none'" in csp
    )
    assert response.headers["x-content-type-options"] == "nosniff"
    assert httpx.get(f"{web_server.url}/_ui/../pyproject.toml").status_code == 404
    assert (
        httpx.get(f"{web_server.url}/_ui/js/main.js")
        .headers["content-type"]
        .startswith("text/javascript")
    )

    page.set_viewport_size({"width": 390, "height": 844})
    open_page(page, web_server)
    unnamed = page.evaluate(
        """() => [...document.querySelectorAll('input, select, textarea, button')]
                  .filter(el => !el.closest('dialog') && el.offsetParent !== null)
                  .filter(el => !(el.labels?.length || el.getAttribute('aria-label') || el.textContent.trim()))
                  .map(el => el.id || el.outerHTML)"""
    )
    assert unnamed == []
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
    sidebar = page.locator("#sidebar")
    toggle = page.get_by_role("button", name="Show conversations")
    assert sidebar.bounding_box()["x"] < 0  # type: ignore[index]  # off-canvas on a phone
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#thread-search")).to_be_focused()
    page.keyboard.press("Escape")
    expect(toggle).to_have_attribute("aria-expanded", "false")

    stub.add_script(key, ["typed with the keyboard"])
    page.locator("#prompt").focus()
    page.keyboard.type(key)
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    page.keyboard.press("Enter")
    expect(page.locator(".msg.ai .body").last).to_have_text("typed with the keyboard")
    expect(page.locator(".msg.human")).to_have_text(f"{key}\nsecond line")
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")


def test_subagent_progress_renders_deerflow_task_events(page: Page, web_server: LiveServer) -> None:
    """No fawn agent emits sub-agent events yet, so this feeds DeerFlow-shaped ``custom``
    events to the page's own reducer and renderer (the module the stream handler uses)."""
    open_page(page, web_server)
    cards = page.evaluate(
        """async () => {
          const { applyTaskEvent, renderTasks } = await import('/_ui/js/tasks.js');
          const tasks = new Map();
          const events = [
            {type: 'task_started', task_id: 'call-1', description: 'Search papers', model_name: 'm1'},
            {type: 'task_running', task_id: 'call-1', message: {type: 'ai', content: 'looking',
              tool_calls: [{name: 'web_search', args: {}}]}, message_index: 1, total_messages: 1,
              usage: {total_tokens: 40}},
            {type: 'task_running', task_id: 'call-1', message: {type: 'ai', content: 'looking'},
              message_index: 1, usage: {total_tokens: 30}},
            {type: 'task_completed', task_id: 'call-1', result: 'found 3', usage: {total_tokens: 90}},
            {type: 'task_started', task_id: 'call-2', description: 'Plot'},
            {type: 'task_failed', task_id: 'call-2', error: 'boom <img src=x>'},
            {type: 'task_timed_out', task_id: 'call-3', error: 'too slow'},
            {type: 'task_cancelled', task_id: 'call-4'},
            {type: 'llm_retry', message: 'not a task'},
          ];
          const handled = events.map(e => applyTaskEvent(tasks, e));
          const box = document.createElement('div');
          renderTasks(box, tasks, new Map([['call-2', {description: 'x', subagent_type: 'coder'}]]));
          return { handled, cards: [...box.children].map(c => ({
            id: c.dataset.taskId, status: c.dataset.status, summary: c.querySelector('summary').textContent,
            steps: [...c.querySelectorAll('li')].map(l => l.textContent),
            text: c.textContent, imgs: c.querySelectorAll('img').length })) };
        }"""
    )
    assert cards["handled"] == [True] * 8 + [False]
    assert [(c["id"], c["status"], c["summary"]) for c in cards["cards"]] == [
        ("call-1", "completed", "Search papers: completed · m1 · 90 tokens"),
        ("call-2", "failed", "Plot (coder): failed"),
        ("call-3", "timed out", "Sub-agent task: timed out"),
        ("call-4", "cancelled", "Sub-agent task: cancelled"),
    ]
    assert cards["cards"][0]["steps"] == ["[web_search] looking"]
    assert "found 3" in cards["cards"][0]["text"]
    assert "boom <img src=x>" in cards["cards"][1]["text"] and cards["cards"][1]["imgs"] == 0
