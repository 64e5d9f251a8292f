"""The generated parts of the docs: written from the code, so they cannot drift from it.

Run ``python -m vaulteval.docs`` from a source checkout to rewrite every part
(``--check``: only say which are out of date, exit 1 if any). Each part sits
between two marker comments in a file of ``docs/``; the prose around the
markers is written by hand and kept. ``parts`` lists the parts; a test fails
when a part differs from what its function writes now.
"""
