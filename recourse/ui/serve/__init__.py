"""What protects the app when it serves: the caps on what one caller may send
(``request_limits``, with ``route_policy`` classifying Gradio's routes), the checked inputs of
every event (``inputs``), this instance's own temporary folder (``instance_folder``) and the
memory an audit gives back (``memory``). Only the app (``recourse.ui``, ``app.py``) imports them.
"""
