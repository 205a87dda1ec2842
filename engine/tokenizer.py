"""The Qwen3 tokenizer (tokenizer.json through the `tokenizers` library), its chat template (the
Qwen3 template's text for system and user turns, `enable_thinking` on or off) and streaming decode."""
from __future__ import annotations

from pathlib import Path

from .config import read_json

from .errors import EngineError


def chat_prompt(user: str, system: str | None = None, enable_thinking: bool = True) -> str:
    """What Qwen3's chat template renders for [system?, user] with add_generation_prompt=True."""
    out = f"<|im_start|>system\n{system}<|im_end|>\n" if system is not None else ""
    out += f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    return out if enable_thinking else out + "<think>\n\n</think>\n\n"


class Tokenizer:
    def __init__(self, model_dir):
        d = Path(model_dir)
        path = d / "tokenizer.json"
        if not path.is_file():
            raise EngineError(f"{path}: missing (the engine needs the model's tokenizer.json)")
        from tokenizers import Tokenizer as _T
        try:
            self._tok = _T.from_file(str(path))
        except Exception as e:
            raise EngineError(f"{path}: cannot be loaded by `tokenizers`: {e}") from None
        cfg_path = d / "tokenizer_config.json"
        self.config = read_json(cfg_path) if cfg_path.is_file() else {}

    def encode(self, text: str) -> list[int]:
        """Token ids; special tokens written in the text (<|im_start|> ...) are recognised, no BOS added
        (Qwen3 adds none)."""
        return self._tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids, skip_special: bool = True) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=skip_special)

    def token_id(self, text: str) -> int | None:
        return self._tok.token_to_id(text)


class StreamDecoder:
    """Text as tokens arrive: each push returns the new text that is complete (a multi-byte character
    split across tokens is held back until its last byte arrives)."""

    def __init__(self, tok: Tokenizer):
        self.tok, self.ids, self.sent = tok, [], ""

    def push(self, token: int) -> str:
        self.ids.append(int(token))
        text = self.tok.decode(self.ids)
        if text.endswith("\ufffd"):
            return ""
        new, self.sent = text[len(self.sent):], text
        return new

    def flush(self) -> str:
        """What is left at the end (an incomplete character as the replacement character)."""
        text = self.tok.decode(self.ids)
        new, self.sent = text[len(self.sent):], text
        return new
