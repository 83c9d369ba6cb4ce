"""manifests/github.yaml against GitHub-shaped answers: issues, and comments per issue.

The fake serves the shapes of GitHub's REST docs ("List repository issues",
"List issue comments"): a bare JSON array per page, the next page in a
``Link`` header, ``since`` keeping what was updated at or after it.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from fakes.api_server import FakeApi, RecordedRequest, Reply, dated
from manifests.harness import assert_clean, run_connector

TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
REPO = "octocat/Hello-World"


def user(login: str, number: int) -> dict[str, Any]:
    return {"login": login, "id": number, "node_id": f"MDQ6VXNlcj{number}", "type": "User", "site_admin": False,
            "html_url": f"https://github.com/{login}"}


def issue(number: int, updated_at: str, comments: int = 0, pull: bool = False) -> dict[str, Any]:
    api = f"https://api.github.com/repos/{REPO}"
    found = {
        "id": 1_000 + number, "node_id": f"MDU6SXNzdWUx{number}", "url": f"{api}/issues/{number}",
        "repository_url": api, "comments_url": f"{api}/issues/{number}/comments",
        "html_url": f"https://github.com/{REPO}/issues/{number}", "number": number, "state": "open",
        "state_reason": None, "title": f"Issue {number}", "body": "It does not work.", "user": user("octocat", 1),
        "labels": [{"id": 208045946, "node_id": "MDU6TGFiZWwyMDgwNDU5NDY=", "url": f"{api}/labels/bug",
                    "name": "bug", "description": "Something isn't working", "color": "f29513", "default": True}],
        "assignee": None, "assignees": [], "milestone": None, "locked": False, "active_lock_reason": None,
        "comments": comments, "closed_at": None, "created_at": "2024-01-02T10:00:00Z", "updated_at": updated_at,
        "closed_by": None, "author_association": "OWNER",
    }
    if pull:
        found["pull_request"] = {"url": f"{api}/pulls/{number}", "merged_at": None}
    return found


def comment(ident: int, number: int, updated_at: str) -> dict[str, Any]:
    api = f"https://api.github.com/repos/{REPO}"
    return {"id": ident, "node_id": f"MDEyOklzc3VlQ29tbWVudD{ident}", "url": f"{api}/issues/comments/{ident}",
            "html_url": f"https://github.com/{REPO}/issues/{number}#issuecomment-{ident}",
            "body": "Me too", "user": user("hubot", 2), "created_at": updated_at, "updated_at": updated_at,
            "issue_url": f"{api}/issues/{number}", "author_association": "COLLABORATOR"}


def link_paged(items: list[dict[str, Any]], request: RecordedRequest, base: str) -> Reply:
    """One page of ``items`` the way GitHub pages: ``per_page``/``page``, a Link header to the next and last."""
    size = int(request.param("per_page", "30"))
    page = int(request.param("page", "1"))
    chunk = items[(page - 1) * size: page * size]
    last = max(1, -(-len(items) // size))
    links = []
    if page < last:
        query = "&".join(f"{k}={v[0]}" for k, v in request.query.items() if k != "page")
        links.append(f'<{base}{request.path}?{query}&page={page + 1}>; rel="next"')
        links.append(f'<{base}{request.path}?{query}&page={last}>; rel="last"')
    return Reply(200, chunk, {"Link": ", ".join(links)} if links else {})


class GitHub:
    """Issues and comments of one repository, served like GitHub serves them."""

    def __init__(self, api: FakeApi):
        self.api = api
        self.issues: list[dict[str, Any]] = []
        self.comments: dict[int, list[dict[str, Any]]] = {}
        api.route("GET", f"/repos/{REPO}/issues", self.list_issues)
        api.route("GET", f"/repos/{REPO}/issues/{{number}}/comments", self.list_comments)

    def list_issues(self, request: RecordedRequest) -> Reply:
        assert request.param("state") == "all" and request.param("sort") == "updated"
        kept = sorted(dated(self.issues, request, "updated_at", start_param="since"), key=lambda i: i["updated_at"])
        return link_paged(kept, request, self.api.url)

    def list_comments(self, request: RecordedRequest) -> Reply:
        number = int(request.path_params["number"])
        if not any(i["number"] == number for i in self.issues):
            return Reply(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
        kept = dated(self.comments.get(number, []), request, "updated_at", start_param="since")
        return link_paged(kept, request, self.api.url)


@pytest.fixture
def github(fake_api):
    hub = GitHub(fake_api)
    hub.issues = [issue(n, at(n), comments=n % 3, pull=n == 5) for n in range(1, 151)]
    hub.comments = {n: [comment(n * 10 + k, n, f"2024-03-{k + 1:02d}T08:00:00Z") for k in range(n % 3)]
                    for n in range(1, 151)}
    return hub


def at(hours: int) -> str:
    """An instant ``hours`` after 2024-02-01T00:00:00Z, as GitHub writes it."""
    return (datetime(2024, 2, 1, tzinfo=timezone.utc) + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def config(api: FakeApi) -> dict[str, Any]:
    return {"access_token": TOKEN, "repository": REPO, "start_date": "2024-01-01T00:00:00Z", "base_url": api.url}


def test_issues_follow_the_link_header_to_the_last_page_with_the_token(github, fake_api, tmp_path):
    sync = run_connector("github", config(fake_api), tmp_path, streams=["issues"])
    assert_clean(sync, "issues")
    assert [r["number"] for r in sync.records("issues")] == list(range(1, 151))
    calls = fake_api.received(f"/repos/{REPO}/issues")
    assert [c.param("page", "1") for c in calls] == ["1", "2"]  # 100 + 50, no request past the last page
    for call in calls:
        assert call.headers["Authorization"] == f"Bearer {TOKEN}"
        assert call.headers["Accept"] == "application/vnd.github+json"
        assert call.param("since") == "2024-01-01T00:00:00Z" and call.param("per_page") == "100"
    assert sync.records("issues")[4]["pull_request"]["url"].endswith("/pulls/5")
    assert sync.state_of("issues") == {"updated_at": at(150)}
    assert TOKEN not in sync.stderr


def test_comments_are_read_per_issue_and_only_under_changed_issues_next_time(github, fake_api, tmp_path):
    github.issues = github.issues[:12]
    first = run_connector("github", config(fake_api), tmp_path, streams=["issue_comments"], label="first")
    assert_clean(first, "issue_comments")
    comments = first.records("issue_comments")
    expected = [c for n in range(1, 13) for c in github.comments[n]]
    assert sorted(c["id"] for c in comments) == sorted(c["id"] for c in expected)
    assert all(c["issue_number"] == c["id"] // 10 for c in comments)
    asked = {int(r.path_params["number"]) for r in fake_api.received() if "number" in r.path_params}
    assert asked == set(range(1, 13))  # one partition per issue, comments or not
    state = first.state_of("issue_comments")
    assert state["parent_state"]["issues"] == {"updated_at": at(12)}
    partitions = {s["partition"]["issue_number"]: s["cursor"]["updated_at"] for s in state["states"]}
    assert partitions[5] == "2024-03-02T08:00:00Z"

    # A new comment on issue 4 moves the issue's updated_at: only issue 4 is asked again.
    github.comments[4].append(comment(49, 4, "2024-04-01T09:30:00Z"))
    github.issues[3] = {**github.issues[3], "updated_at": "2024-04-01T09:30:00Z", "comments": 2}
    fake_api.requests.clear()
    second = run_connector("github", config(fake_api), tmp_path, streams=["issue_comments"],
                           state=first.states(), label="second")
    assert_clean(second, "issue_comments")
    (issues_call,) = fake_api.received(f"/repos/{REPO}/issues")
    assert issues_call.param("since") == at(12)
    comment_calls = fake_api.received(f"/repos/{REPO}/issues/4/comments")
    assert len(comment_calls) == 1 and comment_calls[0].param("since") == "2024-03-01T08:00:00Z"
    # Issue 12 sits at the parent cursor's own instant (`since` is inclusive), so it is asked again too.
    asked = sorted(int(r.path_params["number"]) for r in fake_api.received() if "number" in r.path_params)
    assert asked == [4, 12] and len(fake_api.requests) == 3
    assert [c["id"] for c in second.records("issue_comments")] == [40, 49]  # the cursor's own instant is re-read
    assert second.state_of("issue_comments")["parent_state"]["issues"] == {"updated_at": "2024-04-01T09:30:00Z"}


def test_a_secondary_rate_limit_is_waited_out(github, fake_api, tmp_path):
    github.issues = github.issues[:3]
    fake_api.fault(status=403, headers={"Retry-After": "0"},
                   body={"message": "You have exceeded a secondary rate limit."})
    sync = run_connector("github", config(fake_api), tmp_path, streams=["issues"])
    assert_clean(sync, "issues")
    assert len(sync.records("issues")) == 3 and len(fake_api.requests) == 2


def test_a_bad_token_is_a_config_error_without_the_token(github, fake_api, tmp_path):
    fake_api.route("GET", f"/repos/{REPO}/issues",
                   Reply(401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}))
    sync = run_connector("github", config(fake_api), tmp_path, streams=["issues"])
    assert sync.code == 1
    (error,) = sync.errors()
    assert error["failure_type"] == "config_error"
    assert TOKEN not in sync.stderr and TOKEN not in str(sync.messages)
