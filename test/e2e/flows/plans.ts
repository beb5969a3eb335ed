// The sizes of the flows, shared by the tests and the screenshot script. The CSV run must last long enough
// (several seconds on 2 CPU cores) for the test to watch it and use the page while it runs.
export const csvFlowPlan = {
  trainFile: 'flowers.csv',
  trainRows: 1500,
  newFile: 'flowers-new.csv',
  newRows: 300,
  hiddenUnits: 512,
  batchSize: 8,
  epochs: 40,
  validationShare: 0.2,
  testShare: 0.25,
  secondRunEpochs: 3,
};

export const mnistFlowPlan = {
  /** Training images (the opener's limit); the run's test set is MNIST's 10,000 test images. */
  limit: 2000,
  preset: 'LeNet-5',
  epochs: 1,
  batchSize: 32,
};
