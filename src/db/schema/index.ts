export * from './settings.js';
export * from './users.js';
export * from './catalog.js';
export * from './orders.js';
export * from './files.js';
export * from './payments.js';
export * from './jobs.js';
export * from './source.js';
