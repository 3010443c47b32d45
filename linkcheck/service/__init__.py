"""linkcheck as a system service: the systemd units that check the link after boot and every few minutes
(units.py installs them), the run they start (run.py: wait for the nodes, the check, its journal lines, the bundles'
retention) and the textfile that says how the service's own run went (textfile.py). The alerting rules and the
Grafana dashboard over linkcheck's metrics ship beside them, in monitoring/."""
