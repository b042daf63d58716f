SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter';
