"""Documents (docs/DOCUMENTS.md): the weave engine and its derived view, revisions, the splices of
an edit, and `store.documents`. Imports `storage.feeds`, `storage.engine`.
"""
