"""The web server around the Streamlit app: what reaches the app, and the session cookie.

``serve.py`` (at the repository root) mounts app.py as a Streamlit ``st.App`` with this package's pieces:

- ``gate``: one ASGI middleware in front of every request.  It answers only requests whose Host is the app's own
  (``origins``), accepts a WebSocket or a state-changing request only from the app's own origins, and lets a file
  reach Streamlit's upload endpoint only from a browser session whose signed-in account may upload
  (``upload_grants``), never above the size that session was granted.
- ``session_cookie``: the sign-in token travels in a cookie only the server sets and no script can read or plant
  (HttpOnly, ``__Host-Http-`` prefix); the page hands the server a one-time code (``handoff``) and the server
  answers with the cookie.

Run it with ``make run`` (or ``streamlit run serve.py``); ``app.py`` alone has no gate and refuses to serve.
"""
