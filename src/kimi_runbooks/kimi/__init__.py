"""Kimi's wire formats, shared by the stages, the emulator and the tiny real-SGLang rehearsal model:
the byte-level vocabulary the project's tokenizers are built on, Kimi's special tokens and chat template."""
