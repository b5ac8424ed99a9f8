"""objrel's web server: app.py behind objrel's web gate (`make run`, or `streamlit run serve.py`).

The store comes from $OBJREL_STORE; a deployment behind a proxy names its public origins in
$OBJREL_ALLOWED_ORIGINS (see objrel/web/origins.py).
"""

import streamlit as st
from starlette.middleware import Middleware

from objrel.web.gate import WebGate
from objrel.web.session_cookie import routes

app = st.App("app.py", routes=routes(), middleware=[Middleware(WebGate)])
