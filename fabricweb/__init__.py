"""fabricweb: the central side (storage, health, dashboard, metrics) of the fabric monitor, and the node agent.

Importing this package imports nothing else: the node agent (fabricweb.agent) runs on compute
nodes without Django. Central processes load the Celery app (fabricweb/celery.py) when Django
starts (fabricweb/inventory/apps.py); `celery -A fabricweb` finds it as fabricweb.celery.
"""
