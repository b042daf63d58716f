-- After the holding transaction ends: let VACUUM remove what pruning could not.
VACUUM ghost_test;
