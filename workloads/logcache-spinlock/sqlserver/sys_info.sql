-- CPU facts for the affinity plan; affinity_type_desc is AUTO or MANUAL.
SELECT cpu_count, hyperthread_ratio, socket_count, cores_per_socket, numa_node_count, affinity_type_desc
FROM sys.dm_os_sys_info;
