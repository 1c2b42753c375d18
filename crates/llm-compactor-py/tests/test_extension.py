"""The built extension itself: it must not embed `bpe-openai`'s encoders (issue 32: the
wheel under 15 MB). Counting merges every piece over the library's own rank tables and
never calls the encoder, so the linker leaves its dictionaries (32 MB for o200k, 15 MB for
cl100k) out; a runtime call to it would bring them back."""

from __future__ import annotations

import pathlib

import pytest

import llm_compactor
from llm_compactor import _core

# The first 32 bytes of bpe-openai 0.3.2's serialized o200k and cl100k encoders (a
# MessagePack array header, then the first tokens' bytes). The Rust library's test
# `count_bpe::a_binary_that_calls_the_encoder_embeds_the_dictionaries_whose_heads_we_look_for`
# checks that a binary calling the encoder holds exactly these bytes.
DICTIONARY_HEADS = [
    b"\x9a\xdd\x00\x15\x53\xa6" + b"!\"#$%&'()*+,-./0123456789:",
    b"\x9a\xdd\x00\x09\xd2\xf6" + b"!\"#$%&'()*+,-./0123456789:",
]


def test_the_extension_embeds_no_bpe_openai_encoder() -> None:
    path = pathlib.Path(_core.__file__ or "")
    binary = path.read_bytes()
    for head in DICTIONARY_HEADS:
        assert len(head) == 32
        assert head not in binary, f"{path.name} ({len(binary) >> 20} MB) embeds a bpe-openai dictionary"


@pytest.mark.parametrize("counter", ["o200k", "cl100k"])
@pytest.mark.parametrize(
    "content, tokens",
    [
        ("a" * 100_000, 12_500),
        ("thequickbrownfoxjumpsoverthelazydog" * 9, 99),
        ("\u7684" * 1_000, 1_000),
        (" " * 5_000 + "x", 41),
    ],
)
def test_pieces_past_the_stack_merge_count_as_the_encoder_counts_them(counter: str, content: str, tokens: int) -> None:
    # Single pieces of 300 bytes to 100 KB, merged on the heap. The counts are those of
    # the encoder (equal to tiktoken's) that the extension called for such pieces before;
    # 4 more for the message's framing and role.
    assert llm_compactor.count_tokens([{"role": "user", "content": content}], counter=counter) == tokens + 4
