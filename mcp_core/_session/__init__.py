"""The session: the machine (``SessionMachine``), caller work from admission to its one reply,
the handshake, answers, the server's requests, subscriptions, structured output and priced
tools.
"""
