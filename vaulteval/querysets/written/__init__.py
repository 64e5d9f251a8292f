"""Questions a writer (an agent, a person or a model) wrote from a worksheet of sampled notes.

``worksheet.make_worksheet`` samples notes and writes the worksheet; ``add.add_written`` checks the
questions written into it and writes them as a query set (docs/querysets.md, "Written questions").
"""
