"""Learning from use: next-tool scores from sessions of calls, blended with request and graph.

``model`` learns and scores transitions, ``bm25`` ranks tools by a request's words,
``blend`` ranks the next tools, ``evaluate`` measures recall on held-out transcripts,
``learned_file`` reads and writes the reviewable TOML file, ``store`` says where it lives.
"""
