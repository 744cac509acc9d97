"""Private groups read from and written through the composed store: a client of `storage.store`,
never imported by the layers below.
"""
