"""Which models are sent figures' pictures (model/vision.py), and how they are sent."""

from __future__ import annotations

import base64
import io

import pytest

from jupyter_ai_ci.context.privacy import mask_messages
from jupyter_ai_ci.core.pictures import MAX_SIDE, fitted
from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model.vision import family_takes_images, own_endpoint, takes_images
from jupyter_ai_ci.notebook.reader import png_size


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-mini", "gpt-4.1-nano", "gpt-5", "claude-3-5-sonnet-latest",
                                   "gemini-2.0-flash", "qwen2.5-vl-7b-instruct", "Qwen/Qwen2-VL-2B", "llava:13b",
                                   "llama3.2-vision", "openrouter/anthropic/claude-sonnet-4"])
def test_families_that_take_images(model: str) -> None:
    assert family_takes_images(model)


@pytest.mark.parametrize("model", ["gpt-3.5-turbo", "gpt-4", "qwen2.5-coder-1.5b-instruct", "SmolLM2-135M-Instruct",
                                   "deepseek-coder", "scripted-model", "llama3.1:8b"])
def test_models_that_do_not(model: str) -> None:
    assert not family_takes_images(model)


def test_auto_sends_pictures_to_the_persons_own_endpoint_only_unless_allowed() -> None:
    assert own_endpoint("http://127.0.0.1:8080/v1") and own_endpoint("http://192.168.1.20:11434/v1")
    assert not own_endpoint(None) and not own_endpoint("https://api.openai.com/v1")
    assert takes_images("auto", "http://localhost:11434/v1", "llava")
    assert not takes_images("auto", None, "gpt-4o")  # hosted: a picture cannot be masked
    assert takes_images("auto", None, "gpt-4o", to_hosted=True)
    assert not takes_images("auto", "http://localhost:8080/v1", "qwen2.5-coder")
    assert takes_images("on", None, "my-own-name") and not takes_images("off", "http://localhost/v1", "llava")


def test_a_message_with_pictures_is_sent_as_parts_and_masking_keeps_them() -> None:
    message = Message("user", "The code ran. key sk-abcdefghijklmnopqrstuvwxyz123456", ("iVBORw0KGgo=",))
    masked = mask_messages([message])[0]
    assert masked.images == message.images and "sk-abcdefghijklmnopqrstuvwxyz123456" not in masked.content
    assert masked.as_dict() == {"role": "user", "content": [
        {"type": "text", "text": masked.content},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}
    assert Message("user", "plain").as_dict() == {"role": "user", "content": "plain"}


def test_a_large_picture_is_scaled_to_1024_px_and_a_small_one_kept() -> None:
    from PIL import Image

    def png(width: int, height: int) -> str:
        out = io.BytesIO()
        Image.new("RGB", (width, height), "white").save(out, format="PNG")
        return base64.b64encode(out.getvalue()).decode()

    small = png(640, 480)
    assert fitted(small) == small
    big = fitted(png(3000, 1500))
    assert big is not None and png_size(big) == (MAX_SIDE, 512)
    assert fitted("bm90IGEgcG5n") is None  # not a PNG
