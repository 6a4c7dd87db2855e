"""Training metrics: readers of TensorBoard event files, DI-engine / LightZero folders and stdout or JSONL
logs (``reader.load_metrics`` is the entry point), and the glossary that explains their tags.

Nothing is imported here, so a module that needs one small piece (``table.Problem``) does not load
TensorBoard.
"""
