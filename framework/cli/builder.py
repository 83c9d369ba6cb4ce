"""``manifest-builder MANIFEST [--config CONFIG.json] [--port N] [--host H] [--no-browser] [--allow-custom-code]``.

Starts the connector builder (:mod:`framework.builder`) on 127.0.0.1 (a free port unless ``--port``), prints
its URL and opens it in a browser when one is there (not with ``--no-browser``). MANIFEST may not exist yet:
the builder starts from an empty manifest and Save creates it. Ctrl-C stops it. Exit 2 on a bad argument or
config, before anything listens.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Sequence

from framework.errors import ConfigError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="manifest-builder", description="Edit, test-read and save a manifest in "
                                     "a local web app.")
    parser.add_argument("manifest", help="the manifest file (created on the first save when it does not exist)")
    parser.add_argument("--config", metavar="CONFIG.json", help="the connector's config (JSON)")
    parser.add_argument("--port", type=int, default=0, metavar="N", help="the port (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1", metavar="H",
                        help="the address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument("--allow-custom-code", action="store_true",
                        help="run the manifest's custom components (Python code shipped beside it)")
    return parser


def _open_browser(url: str) -> None:
    import webbrowser

    try:
        webbrowser.get().open(url)
    except webbrowser.Error:
        print("manifest-builder: no browser found; open the URL above yourself", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not 0 <= args.port <= 65535:
        print(f"manifest-builder: --port {args.port} is not a port; give 1 to 65535, or 0 for a free one",
              file=sys.stderr)
        return 2
    folder = os.path.dirname(os.path.abspath(args.manifest))
    if os.path.isdir(args.manifest) or not os.path.isdir(folder):
        print(f"manifest-builder: {args.manifest}: " + ("is a folder; name the manifest file in it"
              if os.path.isdir(args.manifest) else f"its folder {folder} does not exist; create it first"),
              file=sys.stderr)
        return 2
    from framework.builder.server import start
    from framework.builder.session import Session
    from framework.manifest.config_check import read_config_file

    config, config_path = {}, "config.json"
    if args.config:
        try:
            config = read_config_file(args.config).data
        except ConfigError as exc:
            print(f"manifest-builder: {exc}", file=sys.stderr)
            return 2
        config_path = args.config
    session = Session(args.manifest, config, config_path=config_path, allow_custom_code=args.allow_custom_code)
    try:
        server, thread = start(session, args.host, args.port)
    except OSError as exc:
        print(f"manifest-builder: cannot listen on {args.host}:{args.port} ({exc.strerror or exc}); pick another "
              "--port or leave it out for a free one", file=sys.stderr)
        return 2
    try:  # from here on Ctrl-C stops the server, wherever it comes
        print(f"manifest-builder: editing {session.manifest_path} at {server.url} (Ctrl-C stops)", flush=True)
        if args.host not in ("127.0.0.1", "localhost", "::1"):
            print(f"manifest-builder: warning: listening on {args.host}: other machines can reach the builder and "
                  "run test reads with your config", file=sys.stderr)
        if not args.no_browser:
            threading.Thread(target=_open_browser, args=(server.url,), daemon=True).start()
        thread.join()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
