"""The generic backend every generated actgen package builds on.

Nothing in this package names a target: every target fact reaches it through a
generated package (see ../generator and ../generated).
"""
