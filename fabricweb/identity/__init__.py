"""Node identity and the broker's users: the commands that derive a node's signing key (`manage.py node_key`) and
the broker's Redis ACL file (`manage.py broker_acl`) from the site's secret (docs/security.md). What they derive
is fabricweb/nodeauth.py's and fabricweb/brokeracl.py's, which the agents use too."""
