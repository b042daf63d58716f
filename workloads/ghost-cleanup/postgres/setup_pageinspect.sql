-- pageinspect reads raw pages (superuser only); the runner goes on without it and says so.
CREATE EXTENSION IF NOT EXISTS pageinspect;
