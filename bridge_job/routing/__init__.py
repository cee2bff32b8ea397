"""What every flow shares about a message's way: routes (first match wins), soft failures and dead
letters, loop marks, and request/reply correlation.
"""
