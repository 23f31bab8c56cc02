"""Test helpers that ship with the package, so users can test their own notebooks
against a scripted model: a real HTTP server speaking the OpenAI protocol."""

from jupyter_ai_ci.testing.openai_server import ScriptedOpenAIServer
from jupyter_ai_ci.testing.replies import Reply

__all__ = ["Reply", "ScriptedOpenAIServer"]
