"""Language analyzers and ``auto``: which language a text is in, and its BM25 terms in that language.

Usage::

    from vaulteval.index.langs.registry import language_analyzer
    language_analyzer("german")("Tresorverwaltung")        # Snowball German, stopwords, compounds split

- ``catalog``: the languages, their analyzer names, scripts and defaults;
- ``libraries``: the ``languages`` extra's libraries, their versions, the missing-library message;
- ``scripts``: which writing system a text is in (cheap, no library);
- ``words``: the word split shared by every analyzer, and accent folding;
- ``snowball``, ``segmenters``, ``compounds``: the analyzers themselves;
- ``identify``: a note's and a chunk's language (script, then py3langid);
- ``auto``: the ``auto`` analyzer for documents and queries;
- ``registry``: analyzer names (``german``, ``spanish:fold=no``, ``auto``) to analyzers.
"""
