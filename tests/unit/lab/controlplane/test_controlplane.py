"""The lab's control plane is a real, secure Kubernetes: TLS, RBAC, real controllers, kwok stages, audit log."""


from aicr_lab.controlplane import processes


def test_free_ports_are_below_the_ephemeral_range():
    # the kernel gives ephemeral ports to outgoing connections: one picked there could be taken before the server binds it
    low = processes._ephemeral_low()  # pylint: disable=protected-access
    ports = [processes.free_port() for _attempt in range(50)]
    assert all(processes.LOWEST_PORT <= port < low for port in ports), (low, ports)
