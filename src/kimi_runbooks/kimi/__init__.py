"""Kimi's wire formats, shared by the stages, the emulator and the tiny real-SGLang rehearsal model:
Kimi-K2's special tokens and chat template (k2_format), what SGLang's Kimi parsers read and answer
(parsers), and the tokenizers built on the project's byte-level vocabulary: the counting tokenizer
with its template and client directory (tokenizer, chat_template, tokenizer_files) and the tiny
checkpoint's (tiny_tokenizer). Below the emulator and every stage; it imports neither."""
