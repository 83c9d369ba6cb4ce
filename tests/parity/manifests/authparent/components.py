"""Parity scenario (authparent): an authenticator that signs each request itself, as a NoAuth subclass.

Written for this test (the shape of a connector that fetches its own token: requests' auth protocol,
``__call__(request) -> request``). It asks the API's ``/token`` for a token once, with the client key from
the config, and sends it as a bearer token with a header of its own.
"""

from collections.abc import Mapping
from dataclasses import InitVar, dataclass
from typing import Any

import requests
from airbyte_cdk.sources.declarative.auth.declarative_authenticator import NoAuth


@dataclass
class TokenSigner(NoAuth):
    config: Mapping[str, Any]
    parameters: InitVar[Mapping[str, Any]]

    def __post_init__(self, parameters: Mapping[str, Any]) -> None:
        self._token = None

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        if self._token is None:
            answer = requests.post(self.config["base_url"] + "/token", json={"key": self.config["client_key"]},
                                   timeout=10)
            answer.raise_for_status()
            self._token = answer.json()["token"]
        request.headers.update({"Authorization": "Bearer " + self._token, "X-Signed-By": "token-signer"})
        return request
