"""validate-manifest on AsyncRetriever: the parity manifest passes; the job's requests may read only the
responses that exist when they run; their error handlers cannot shrink pages or split windows; a target
requester needs its extractor. Every problem is located (line and column) with a fix."""

from __future__ import annotations

from pathlib import Path

from framework.manifest import check_manifest_text
from framework.models import AsyncRetriever

MANIFEST = (Path(__file__).resolve().parents[1] / "parity" / "manifests" / "async_report.yaml").read_text()


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_report_manifest_is_valid():
    checked = check_manifest_text(MANIFEST)
    assert checked.ok and not checked.diagnostics, [d.format() for d in checked.diagnostics]
    retriever = checked.source.streams[0].retriever
    assert isinstance(retriever, AsyncRetriever)
    assert retriever.status_mapping.statuses()["ready"] == "completed"
    assert checked.source.max_concurrent_async_job_count == 2


def test_a_request_reading_a_response_that_does_not_exist_yet_is_located():
    text = MANIFEST.replace('path: "/reports/{{ creation_response[\'id\'] }}/delete"',
                            'path: "/reports/{{ download_target }}/delete"').replace(
        "        path: /reports\n", "        path: \"/reports/{{ polling_response.id }}\"\n")
    checked = check_manifest_text(text, "async.yaml")
    found = {(d.code, d.line) for d in checked.errors}
    assert ("async-variable-too-early", line_of(text, "/reports/{{ download_target }}/delete")) in found
    assert ("async-variable-too-early", line_of(text, "{{ polling_response.id }}")) in found
    early = next(d for d in checked.errors if "polling_response" in d.message)
    assert "`creation_requester` reads `polling_response`" in early.message and early.fix
    assert early.format().startswith(f"async.yaml:{early.line}:")


def test_a_job_request_cannot_reduce_pages_and_a_target_requester_needs_an_extractor():
    handler = ("        http_method: POST\n        error_handler:\n          type: DefaultErrorHandler\n"
               "          response_filters:\n            - type: HttpResponseFilter\n"
               "              action: REDUCE_PAGE_SIZE\n              http_codes: [413]\n")
    text = MANIFEST.replace("        path: /reports\n        http_method: POST\n", "        path: /reports\n" + handler)
    checked = check_manifest_text(text)
    [problem] = checked.errors
    assert problem.code == "async-action" and problem.line == line_of(text, "action: REDUCE_PAGE_SIZE")

    text = MANIFEST.replace("      download_target_extractor:\n        type: DpathExtractor\n        field_path: [urls]\n",
                            "      download_target_requester:\n        $ref: \"#/definitions/api\"\n"
                            "        path: /files\n")
    checked = check_manifest_text(text)
    assert not checked.ok
    assert any("download_target_extractor" in d.message for d in checked.errors), [d.format() for d in checked.errors]


def test_urls_extractor_is_ignored_with_a_warning_as_airbyte_ignores_it():
    """`urls_extractor` (the old name of `download_target_extractor`, sendgrid's manifest has it): airbyte-cdk
    ignores the key, so the job is downloaded once with no target; here too, with a warning that says so."""
    text = MANIFEST.replace("      download_target_extractor:\n", "      urls_extractor:\n")
    checked = check_manifest_text(text, "async.yaml")
    assert checked.ok, [d.format() for d in checked.errors]
    [problem] = checked.diagnostics
    assert (problem.severity, problem.code, problem.line) == ("warning", "ignored-old-field",
                                                              line_of(text, "urls_extractor:"))
    assert "`urls_extractor`" in problem.message and "ignores it" in problem.message
    assert problem.fix and "download_target_extractor" in problem.fix
    retriever = checked.source.streams[0].retriever
    assert isinstance(retriever, AsyncRetriever) and retriever.download_target_extractor is None
    assert not check_manifest_text(text, strict=True).ok
