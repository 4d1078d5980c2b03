/**
 * Imported first by suites that render ink: ink reads CI/CONTINUOUS_INTEGRATION once, when it is
 * first imported, and in CI draws only the last frame. ES modules run their imports in order, so
 * deleting the variables here, before any module that imports ink, gives the frames of a terminal.
 */
delete process.env.CI;
delete process.env.CONTINUOUS_INTEGRATION;
